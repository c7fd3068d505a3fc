/**
 * Fuzzes the REST API with Schemathesis from its own OpenAPI document: the real app and a
 * worker, on a disposable embedded Postgres and a Temporal dev server, called with an admin
 * PAT, with every check Schemathesis has. Run it through scripts/fuzz.sh (`npm run fuzz`),
 * which installs Schemathesis on first use; docs/fuzzing.md explains the choices.
 *
 * Nothing leaves the machine: the app's and the worker's outbound policy resolves no name
 * (the Git sources and peers the fuzzer registers point anywhere).
 *
 *   npm run fuzz -- [--max-examples N] [--seed S] [-- <schemathesis options>]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createApp } from '../api/app';
import { httpServer } from '../api/http/server';
import { createOutbound } from '../platform/outbound';
import { loadSettings } from '../platform/settings';
import { createTemporal } from '../platform/temporal';
import { ensureTemporalCli, startTemporal } from '../scripts/infra/temporal';
import { startWorker } from '../worker/run';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { benchPat, freePort, runBench, startBenchDatabase } from './support';

/** Anything after a second `--` goes to Schemathesis as is (e.g. `--include-path-regex`, `--report har`). */
const { values: args, positionals: passThrough } = parseArgs({
  options: { 'max-examples': { type: 'string', default: '50' }, seed: { type: 'string' } },
  allowPositionals: true,
});

/**
 * Every check Schemathesis has: a 5xx, an answer outside the document (status, content
 * type, headers, body), a request the document calls valid refused (positive data), one it
 * calls invalid accepted (negative data), a missing required header accepted, and the
 * authentication checks.
 */
const CHECKS = ['all'];

/**
 * Operations left out, each for a reason:
 * - `/swagger…`: Development only (absent in Production, which this runs), and HTML.
 * - `/metrics`: Prometheus text, no schema to hold it to.
 */
const EXCLUDED_PATHS = '^/(swagger|metrics)';

/** What the document states beyond JSON Schema, taught to Schemathesis (formats, x-query-schema, x-issued-by). */
const HOOKS = path.join(__dirname, 'fuzz_hooks.py');
/** The statuses a check takes as right where the document answers one its defaults do not list. */
const CONFIG = path.join(__dirname, 'schemathesis.toml');

/** Names resolve to nothing: whatever Git source or peer the fuzzer registers is never called. */
const nowhere = createOutbound(
  { allow: [], deny: [] },
  {
    resolve: async (host) => {
      throw Object.assign(new Error(`fuzz: ${host} is not looked up`), { code: 'ENOTFOUND' });
    },
  },
);

function runSchemathesis(baseUrl: string, token: string): Promise<number> {
  const st = process.env.SCHEMATHESIS ?? 'st';
  const argv = [
    '--config-file',
    CONFIG,
    'run',
    `${baseUrl}/api/openapi.json`,
    '--url',
    baseUrl,
    '--header',
    `Authorization: Bearer ${token}`,
    '--checks',
    CHECKS.join(','),
    '--exclude-path-regex',
    EXCLUDED_PATHS,
    '--max-examples',
    args['max-examples'],
    '--phases',
    'examples,coverage,fuzzing',
    '--workers',
    '2',
    '--request-timeout',
    '30',
    '--output-sanitize',
    'true',
    ...(args.seed ? ['--seed', args.seed] : []),
    ...passThrough,
  ];
  const env = { ...process.env, SCHEMATHESIS_HOOKS: path.basename(HOOKS, '.py'), PYTHONPATH: path.dirname(HOOKS) };
  const child = spawn(st, argv, { stdio: 'inherit', env });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

async function main() {
  const database = await startBenchDatabase(await freePort());
  const temporal = await startTemporal({ cli: await ensureTemporalCli(log), port: await freePort() });
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const settings = loadSettings({
    Environment: 'Production',
    Database__Url: database.url,
    Temporal__Address: temporal.address,
    Temporal__TaskQueue: 'fuzz',
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
    Http__PublicBaseUrl: baseUrl,
    Logging__Level: 'silent',
  });
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN') });
  const client = createTemporal(settings);
  const worker = await startWorker(settings, database.db, { outbound: nowhere, logger: pino({ level: 'silent' }) });
  const app = await createApp({
    settings,
    db: database.db,
    logger: pino({ level: 'error' }),
    temporal: client.client,
    temporalHealthy: client.healthy,
    outbound: nowhere,
  });
  const server = httpServer(app, settings.errorsBaseUrl);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  try {
    const code = await runSchemathesis(baseUrl, await benchPat(database.db, 'admin', 'fuzz-admin'));
    if (code !== 0) throw new Error(`schemathesis found failures (exit ${code})`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await app.close();
    worker.worker.shutdown();
    await worker.running;
    await worker.connection.close();
    await client.connection.close();
    await nowhere.close();
    await temporal.stop();
    await database.stop();
  }
}

const log = (line: string) => process.stderr.write(`[fuzz] ${line}\n`);

runBench(main);
