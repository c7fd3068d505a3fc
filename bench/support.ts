import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type { Knex } from 'knex';
import type { Role } from '../api/auth/roles';
import { createDb, migrateLatest } from '../db/connection';
import { insertPat } from '../db/repos/pats';
import { ensureTenant } from '../db/repos/tenants';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { postmasterPid, startPostgres } from '../scripts/infra/postgres';

export { freePort } from '../scripts/infra/processes';

/** A disposable embedded Postgres with a migrated `bench` database. */
export async function startBenchDatabase(port: number) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-bench-'));
  chmodSync(dir, 0o755); // the embedded server may run as the postgres user
  const postgres = await startPostgres({ dataDir: path.join(dir, 'pg'), port, disposable: true });
  await postgres.createDatabase('bench');
  const url = postgres.url('bench');
  const db = createDb(url, 2);
  await migrateLatest(db);
  return {
    url,
    db,
    /** CPU seconds of this Postgres (postmaster, its live backends and those that exited). */
    cpuSeconds: () => cpuSecondsOfTree(postmasterPid(path.join(dir, 'pg'))),
    stop: async () => {
      await db.destroy().catch(() => {});
      await postgres.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * bench/platform-server.ts in a process of its own (the load generator stays in this one):
 * the full app and the bare Koa routes. BENCH_CPU_PROF=<dir> writes its CPU profile there.
 */
export async function startBenchServers(env: Record<string, string>) {
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const server = spawn(process.execPath, [...profile, '--import', 'tsx', path.join(__dirname, 'platform-server.ts')], {
    env: {
      ...process.env,
      Environment: 'Production',
      Secrets__EncryptionKey: Buffer.alloc(32, 1).toString('base64'),
      Logging__Level: 'silent',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ports = await new Promise<{ full: number; bare: number }>((resolve, reject) => {
    readline.createInterface({ input: server.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    server.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
  });
  return {
    full: `http://127.0.0.1:${ports.full}`,
    bare: `http://127.0.0.1:${ports.bare}`,
    pid: server.pid!,
    stop: async () => {
      if (server.exitCode !== null) return;
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGINT'); // SIGINT lets --cpu-prof write its profile
      await exited;
    },
  };
}

/** A process's resident memory now (VmRSS), bytes; NaN when /proc does not say. */
export function residentBytesOf(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kib === undefined ? NaN : Number(kib) * 1024;
}

/**
 * CPU seconds (user + system) from /proc: of one process (`pid`), or of every process of
 * this machine with that command name (`name`, e.g. all `postgres` processes), each with its
 * exited children's: Postgres backends come and go with the pools' connections, and the
 * postmaster keeps the time of those that exited.
 */
export function cpuSecondsOf(which: { pid: number } | { name: string }): number {
  const pids = 'pid' in which ? [String(which.pid)] : readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if ('name' in which && stat.slice(stat.indexOf('(') + 1, close) !== which.name) continue;
      const fields = stat.slice(close + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]); // utime, stime, cutime, cstime
    } catch {
      // gone meanwhile
    }
  }
  return ticks / 100; // USER_HZ
}

/** CPU seconds of a process and its children (live ones, and through cutime those that exited). */
export function cpuSecondsOfTree(pid: number): number {
  const children = readdirSync('/proc').filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid; // ppid
    } catch {
      return false; // gone meanwhile
    }
  });
  return [pid, ...children.map(Number)].reduce((sum, each) => sum + cpuSecondsOf({ pid: each }), 0);
}

/**
 * bench/api-server.ts in a process of its own, on `databaseUrl` (Production settings, and
 * `env`; with imageRuntime().env there, the image's allocator and V8 settings). BENCH_CPU_PROF=<dir> writes
 * its CPU profile there.
 */
export async function startApiProcess(databaseUrl: string, env: Record<string, string> = {}) {
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', path.join(__dirname, 'api-server.ts')], {
    env: {
      ...process.env,
      Environment: 'Production',
      Database__Url: databaseUrl,
      Secrets__EncryptionKey: Buffer.alloc(32, 1).toString('base64'),
      Logging__Level: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`api server exited (${code})`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = () => (child.kill('SIGINT'), exited); // SIGINT lets --cpu-prof write its profile
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop };
}

/** A PAT of `role` in tenant `default`, written to the database as `npm run fleet -- create-pat` does. */
export async function benchPat(db: Knex, role: Role, name: string): Promise<string> {
  await ensureTenant(db, 'default');
  const token = generateToken('svc-pat');
  await insertPat(db, {
    tenant_id: 'default',
    name,
    token_hash: hashToken(token),
    role,
    allowed_endpoints: null,
    expires_at: new Date(Date.now() + 86_400_000),
    created_by: 'bench',
  });
  return token;
}

/** This process's open files limits (`ulimit -n`, soft and hard: a process may raise its soft limit to the hard one). */
export function openFilesLimits(): { soft: number; hard: number } {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = line!.split(/\s+/).slice(3, 5).map(Number);
  return { soft: soft!, hard: hard! };
}

/** Runs a bench's main and exits with its outcome. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
