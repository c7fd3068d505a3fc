/**
 * `npm run dev`: the whole stack on one machine. Embedded Postgres and the Temporal dev
 * server (with its Web UI) keep their data in .dev-data/ across restarts (`-- --reset`
 * starts empty); migrations run; api and worker start as child processes under
 * dev/supervisor.ts (restarted with back-off when they crash; their JSON log lines printed
 * for people by dev/pretty-log.ts, or as they are with `-- --json`), and so does a vite
 * watcher that rebuilds the operator console into console/dist on every change (the api
 * serves it at /; reload the page). Ctrl-C or SIGTERM stops everything this started, api
 * and worker first. Needs no terminal.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, migrateLatest } from '../db/connection';
import { findActiveAgentCa } from '../db/repos/agent-ca';
import { countPats } from '../db/repos/pats';
import { issuePat } from '../domain/tokens/pats';
import { postgresUrl } from './infra/postgres-url';
import { ensureTemporalCli, MissingToolError, startTemporal } from './infra/temporal';
import { formatLogLine } from './dev/pretty-log';
import { DEMO_USERS, startDemoIdentityProvider } from './dev/demo-oidc';
import { Supervisor } from './dev/supervisor';

const ROOT = path.resolve(__dirname, '..');
const DATA = path.join(ROOT, '.dev-data');
const PORTS = { api: 8080, agents: 4320, temporal: 7233, temporalUi: 8233, postgres: 5433, identity: 8090 };
/** Loopback and the private ranges: production refuses them unless Outbound:Allow names them. */
const DEV_OUTBOUND_ALLOW = '127.0.0.0/8,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7';
const JSON_OUTPUT = process.argv.includes('--json');
const COLOR = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
const log = (line: string) => process.stdout.write(`[dev] ${line}\n`);

const supervisor = new Supervisor({ log, output: printChildLine });

/** Readable lines for people (pretty-log.ts); `--json` keeps the processes' JSON lines as they are. */
function printChildLine(service: string, line: string): void {
  const text = JSON_OUTPUT ? line : formatLogLine(service, line, { color: COLOR });
  process.stdout.write(`${text}\n`);
}

/** api and worker run under the supervisor: restarted when they crash, stopped first. */
function startService(name: string, entry: string, env: Record<string, string>): void {
  supervisor.start({
    name,
    args: ['--import', 'tsx', path.join(ROOT, entry)],
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
}

/**
 * Postgres runs in a process of its own, in its own process group (a Ctrl-C in the
 * terminal must not stop it before api and worker have finished with it).
 */
async function startPostgresProcess(dataDir: string, port: number, database: string): Promise<() => Promise<void>> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'infra', 'postgres-process.ts'), dataDir, String(port), database],
    {
      cwd: ROOT,
      detached: true,
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (data: string) => data.includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`embedded Postgres exited (${code})`)));
  });
  return () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
}

/** vite rebuilds the console on every change to console/ (the api serves console/dist). */
function watchConsole(): void {
  supervisor.start({
    name: 'console',
    args: [
      path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'),
      'build',
      'console',
      '--watch',
      '--logLevel',
      'warn',
    ],
    cwd: ROOT,
    env: { ...process.env, VITE_CONFIG_NATIVE_IGNORE_WARNING: 'true' },
  });
}

async function waitForReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${url} did not become ready within ${timeoutMs / 1000}s`);
}

/** The first start of an empty data directory issues an admin PAT and shows it once. */
/** The agents' CA certificate (public), for agents and `npm run agents -- --ca`, once the api created it. */
async function writeAgentCa(databaseUrl: string): Promise<string> {
  const db = createDb(databaseUrl, 1);
  try {
    const row = await findActiveAgentCa(db);
    const file = path.join(DATA, 'agent-ca.pem');
    writeFileSync(file, row?.certificate_pem ?? '');
    return path.relative(process.cwd(), file);
  } finally {
    await db.destroy();
  }
}

async function firstAdminToken(databaseUrl: string): Promise<string | undefined> {
  const db = createDb(databaseUrl, 2);
  try {
    await migrateLatest(db);
    if ((await countPats(db)) > 0) return undefined;
    const request = {
      tenantId: 'default',
      name: 'dev-admin',
      role: 'admin',
      allowedEndpoints: null,
      expiresInDays: 90,
      createdBy: 'npm run dev',
    };
    return (await db.transaction((trx) => issuePat(trx, request, 90))).token;
  } finally {
    await db.destroy();
  }
}

async function main() {
  supervisor.stopOnSignals();
  if (process.argv.includes('--reset')) {
    log('--reset: removing .dev-data/');
    rmSync(DATA, { recursive: true, force: true });
  }
  mkdirSync(DATA, { recursive: true });

  const cli = await ensureTemporalCli(log);
  log(`starting embedded Postgres on ${PORTS.postgres} (data in .dev-data/postgres)...`);
  supervisor.afterChildren(
    'Postgres',
    await startPostgresProcess(path.join(DATA, 'postgres'), PORTS.postgres, 'fleet'),
  );
  const databaseUrl = postgresUrl(PORTS.postgres, 'fleet');

  log(`starting the Temporal dev server on ${PORTS.temporal}, Web UI on ${PORTS.temporalUi}...`);
  const temporal = await startTemporal({
    cli,
    port: PORTS.temporal,
    uiPort: PORTS.temporalUi,
    dbFile: path.join(DATA, 'temporal.db'),
  });
  supervisor.afterChildren('Temporal', () => temporal.stop());

  log('running migrations...');
  const token = await firstAdminToken(databaseUrl);

  const consoleUrl = `http://localhost:${PORTS.api}`;
  log(`starting the demo identity provider on ${PORTS.identity}...`);
  const identity = await startDemoIdentityProvider(PORTS.identity, consoleUrl);
  supervisor.afterChildren('identity provider', () => identity.stop());

  const settings = {
    Environment: 'Development',
    Http: { Port: PORTS.api, PublicBaseUrl: consoleUrl, ShutdownDelaySeconds: 0 },
    Authentication: { Oidc: { Authority: identity.issuer, Audience: 'fleet-dev' } },
    Database: { Url: databaseUrl },
    Temporal: { Address: temporal.address },
    Agents: { Listen: `0.0.0.0:${PORTS.agents}` },
    // Local experiments: bare repositories under the temporary directory, and Git servers or
    // a second installation on this machine or its network (docs/decisions.md, Outbound calls).
    Git: { FileRoots: os.tmpdir() },
    Outbound: { Allow: DEV_OUTBOUND_ALLOW },
  };
  const settingsFile = path.join(DATA, 'settings.json');
  writeFileSync(settingsFile, `${JSON.stringify(settings, null, 2)}\n`);
  const env = { FLEET_SETTINGS_FILE: settingsFile };
  startService('api', 'api/main.ts', env);
  startService('worker', 'worker/main.ts', env);
  watchConsole();
  await waitForReady(`http://localhost:${PORTS.api}/readyz`, 60_000);
  const caFile = await writeAgentCa(databaseUrl);

  const lines = [
    '',
    'Fleet Configuration Service is running (Ctrl-C stops everything).',
    `  Console        ${consoleUrl}/  (sign in as a demo user below; rebuilt on every change to console/)`,
    `  API            http://localhost:${PORTS.api}/api    (OpenAPI: /api/openapi.json, explorer: http://localhost:${PORTS.api}/swagger)`,
    `  Agents         wss://localhost:${PORTS.agents}/v1/opamp  (OpAMP over WebSocket or HTTPS POST, TLS; trust ${caFile})`,
    `                 enroll with a bootstrap token from POST /api/tokens, then e.g.`,
    `                 npm run agents -- --count 10 --ca ${caFile} --token <svc-bt…>`,
    `  Demo users     ${DEMO_USERS.map((user) => `${user.sub} (${user.role})`).join(', ')}`,
    `                 any password, at the demo identity provider ${identity.issuer}`,
    `  Temporal UI    ${temporal.uiUrl}`,
    `  Postgres       ${databaseUrl}`,
    `  Data           .dev-data/  (npm run dev -- --reset starts empty)`,
    '',
    token
      ? `  Admin token (shown once; store it now):\n    ${token}`
      : '  Admin token: the one printed on first start, or issue another:',
    '    npm run fleet -- create-pat --name my-admin --role admin',
    `  Try it: curl -H "Authorization: Bearer <token>" http://localhost:${PORTS.api}/api/tenant`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch(async (error: unknown) => {
  const message = error instanceof MissingToolError ? error.message : `npm run dev failed: ${(error as Error).message}`;
  process.stderr.write(`${message}\n`);
  await supervisor.stop();
  process.exit(1);
});
