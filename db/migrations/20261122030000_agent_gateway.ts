import type { Knex } from 'knex';

/**
 * Every agent message updates its row (`last_seen_at`, status fields): room on each page
 * lets Postgres do those as HOT updates (no index touched), since none of the columns a
 * heartbeat or a config report writes is indexed. The liveness sweep reads online agents
 * without an index on `last_seen_at` on purpose: such an index would make every heartbeat
 * a non-HOT update of all the table's indexes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE agents SET (fillfactor = 80)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE agents RESET (fillfactor)');
}
