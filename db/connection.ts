import knex, { Knex } from 'knex';
import { pg } from './pg-types';
import { migrationSource } from './migrations';

export type Db = Knex | Knex.Transaction;

export function createDb(url: string, poolMax = 10): Knex {
  void pg; // type parsers registered on import
  return knex({
    client: 'pg',
    connection: { connectionString: url, application_name: 'fleet-config' },
    pool: { min: 0, max: poolMax },
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
}

export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}

/** Resolves when Postgres answers (readiness checks). */
export async function ping(db: Db): Promise<void> {
  await db.raw('SELECT 1');
}
