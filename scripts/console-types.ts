/**
 * `npm run console:types`: regenerates console/src/api/schema.d.ts from the routes the app
 * serves. createApp needs a Postgres to LISTEN on, so this starts a throwaway embedded one
 * (a few seconds) and builds the app in-process, configured as the test suite's apps are.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createApp } from '../api/app';
import { createDb } from '../db/connection';
import { loadSettings } from '../platform/settings';
import { startPostgres } from './infra/postgres';
import { freePort } from './infra/processes';
import { openApiDocumentOf, schemaTypes, SCHEMA_TYPES_FILE } from './console/schema-types';

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fleet-console-types-'));
  chmodSync(dataDir, 0o755); // as root, the embedded server runs as the postgres user
  const postgres = await startPostgres({ dataDir: path.join(dataDir, 'pg'), port: await freePort(), disposable: true });
  const settings = loadSettings({
    Environment: 'Production',
    Database__Url: postgres.url('postgres'),
    Authentication__Oidc__Authority: 'http://127.0.0.1:1/oidc',
    Authentication__Oidc__Audience: 'fleet',
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
    Http__PublicBaseUrl: 'http://localhost',
    Logging__Level: 'silent',
  });
  const db = createDb(settings.database.url, 1);
  try {
    const app = await createApp({ settings, db, logger: pino({ level: 'silent' }) });
    writeFileSync(SCHEMA_TYPES_FILE, await schemaTypes(openApiDocumentOf(app.routes)));
    await app.close();
    process.stdout.write(`wrote ${path.relative(process.cwd(), SCHEMA_TYPES_FILE)}\n`);
  } finally {
    await db.destroy();
    await postgres.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`console:types failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
