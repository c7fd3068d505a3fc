/**
 * The embedded Postgres in a process of its own (postgres-process.ts), so a test or bench can
 * stop it and start it again under running clients, as an operator restarts a database: the
 * same data directory and port each time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface PostgresChild {
  process: ChildProcess;
  /** A clean stop (SIGTERM: the server's fast shutdown); resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts Postgres on `dataDir` (made on the first start) and `port`, with `database`; resolves once it accepts connections. */
export async function spawnPostgres(options: {
  dataDir: string;
  port: number;
  database: string;
}): Promise<PostgresChild> {
  const script = path.join(__dirname, 'postgres-process.ts');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', script, options.dataDir, String(options.port), options.database],
    { cwd: path.resolve(__dirname, '../..'), stdio: ['pipe', 'pipe', 'pipe'] }, // its stdin closing stops it
  );
  let said = '';
  child.stderr.on('data', (d) => (said += String(d)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`embedded Postgres exited (${code}) before it was ready: ${said}`)));
  });
  return {
    process: child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
