import type { Knex } from 'knex';

/**
 * The agent gateway's sweep for silent agents (`status = 'online' AND last_seen_at < …`)
 * reads only online agents, through a small partial index, on every replica every
 * heartbeat interval.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX agents_online_last_seen ON agents (last_seen_at) WHERE status = 'online'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS agents_online_last_seen');
}
