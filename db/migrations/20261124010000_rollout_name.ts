import type { Knex } from 'knex';

/**
 * A rollout's optional `name` (what operators call it in lists, events and the Temporal UI)
 * and `description` (why the change is made). Null when not given.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rollouts ADD COLUMN name text, ADD COLUMN description text');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rollouts DROP COLUMN name, DROP COLUMN description');
}
