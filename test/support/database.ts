import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { createDb } from '../../db/connection';
import { testInfra } from './infra-env';

export interface TestDatabase {
  url: string;
  db: Knex;
  drop(): Promise<void>;
}

async function admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: testInfra().postgresUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database of its own (a copy of the template the setup migrated). */
export async function createTestDatabase(poolMax = 10): Promise<TestDatabase> {
  const infra = testInfra();
  const name = `test_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${infra.templateDatabase}`));
  const url = infra.postgresUrl.replace(/\/postgres$/, `/${name}`);
  const db = createDb(url, poolMax);
  return {
    url,
    db,
    drop: async () => {
      await db.destroy();
      await admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
