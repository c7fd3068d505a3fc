/**
 * Runs the embedded Postgres as its own process for `npm run dev`, so the dev supervisor
 * decides when it stops (after api and worker). Prints `ready` once accepting connections;
 * stops on SIGTERM, SIGINT or when its parent goes away (stdin closes).
 * Usage: postgres-process.ts <dataDir> <port> <database>
 */
import { startPostgres } from './postgres';

async function main() {
  const [dataDir, port, database] = process.argv.slice(2);
  const postgres = await startPostgres({ dataDir: dataDir!, port: Number(port) });
  await postgres.createDatabase(database!);
  process.stdout.write('ready\n');
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void postgres.stop().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdin.on('close', stop).resume();
}

main().catch((error: unknown) => {
  process.stderr.write(`embedded Postgres failed to start: ${(error as Error).message}\n`);
  process.exit(1);
});
