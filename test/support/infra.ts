/**
 * The test suite's infrastructure, run as a child process of jest's global setup (under
 * tsx, so ESM-only packages load natively): an embedded Postgres with a migrated template
 * database, a Temporal dev server, and two OIDC issuers (the trusted one and a stranger).
 * It prints one JSON line with their addresses, then runs until stdin closes.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { createDb, migrateLatest } from '../../db/connection';
import { startPostgres } from '../../scripts/infra/postgres';
import { ensureTemporalCli, startTemporal } from '../../scripts/infra/temporal';
import { ensureTemporalTestServer } from '../../scripts/infra/temporal-test-server';
import { startOidcIssuer } from './oidc-issuer';

export const TEMPLATE_DATABASE = 'fleet_template';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitForNamespace(address: string, namespace: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  const connection = await Connection.connect({ address });
  try {
    for (;;) {
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await connection.close();
  }
}

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`[infra] ${line}\n`);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'fleet-test-'));
  chmodSync(dataDir, 0o755); // the embedded server may run as the postgres user
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const cli = await ensureTemporalCli(log);
    const temporalTestServer = await ensureTemporalTestServer(log);
    const [pgPort, temporalPort, issuerPort, strangerPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const [postgres, temporal, issuer, stranger] = await Promise.all([
      startPostgres({ dataDir: path.join(dataDir, 'pg'), port: pgPort, disposable: true }),
      startTemporal({ cli, port: temporalPort }),
      startOidcIssuer(issuerPort),
      startOidcIssuer(strangerPort),
    ]);
    stops.push(
      () => postgres.stop(),
      () => temporal.stop(),
      () => issuer.stop(),
      () => stranger.stop(),
    );
    await postgres.createDatabase(TEMPLATE_DATABASE);
    const db = createDb(postgres.url(TEMPLATE_DATABASE), 2);
    await migrateLatest(db);
    await db.destroy();
    await waitForNamespace(temporal.address, 'default');
    process.stdout.write(
      `${JSON.stringify({
        postgresUrl: postgres.url('postgres'),
        templateDatabase: TEMPLATE_DATABASE,
        temporalAddress: temporal.address,
        temporalTestServer,
        oidcIssuer: issuer.issuer,
        strangerIssuer: stranger.issuer,
      })}\n`,
    );
  } catch (error) {
    log(`failed to start: ${(error as Error).message}`);
    await stopAll();
    process.exit(1);
  }
  const shutdown = () => void stopAll().then(() => process.exit(0));
  process.stdin.on('end', shutdown).on('close', shutdown).resume();
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

void main();
