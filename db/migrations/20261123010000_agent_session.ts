import type { Knex } from 'knex';

/**
 * The WebSocket session that speaks for the agent now (null: none, or HTTP). A socket that
 * closes marks the agent offline only while it is still that session: an agent that
 * reconnected to another replica before its old socket's close was noticed stays online.
 * Not indexed, so writing it keeps updates HOT.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE agents ADD COLUMN session_id uuid');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE agents DROP COLUMN session_id');
}
