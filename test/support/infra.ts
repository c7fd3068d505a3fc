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
import { startOidcIssuer } from '../../scripts/infra/oidc-issuer';

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

/**
 * How long each step of starting the infrastructure may take (building the Temporal CLI on a
 * fresh machine comes before, without one). A step that hangs fails the suite, named, rather
 * than leaving jest waiting for ever.
 */
const STEP_DEADLINE_MS = 120_000;

function withinDeadline<T>(work: Promise<T>, failure: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${failure} within ${STEP_DEADLINE_MS / 1000} s`)), STEP_DEADLINE_MS);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
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
    const [pgPort, temporalPort] = await Promise.all([freePort(), freePort()]);
    // Each one's stop is kept as soon as it is up, so a failure stops those that started.
    const started = <T extends { stop(): Promise<void> }>(starting: Promise<T>) =>
      starting.then((service) => {
        stops.push(() => service.stop());
        return service;
      });
    const [postgres, temporal, issuer, stranger] = await withinDeadline(
      Promise.all([
        started(startPostgres({ dataDir: path.join(dataDir, 'pg'), port: pgPort, disposable: true })),
        started(startTemporal({ cli, port: temporalPort })),
        started(startOidcIssuer()),
        started(startOidcIssuer()),
      ]),
      'Postgres, the Temporal dev server and the OIDC issuers did not all start',
    );
    await withinDeadline(
      (async () => {
        await postgres.createDatabase(TEMPLATE_DATABASE);
        const db = createDb(postgres.url(TEMPLATE_DATABASE), 2);
        await migrateLatest(db);
        await db.destroy();
        await waitForNamespace(temporal.address, 'default');
      })(),
      'the template database was not migrated, or Temporal had no default namespace',
    );
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
