import type { Knex } from 'knex';

/**
 * When the agent first connected with a certificate of ours. From then on it has shown it
 * keeps its certificate, so the bootstrap token it enrolled with no longer admits it (a
 * holder of a fleet's shared token cannot speak as an agent that moved to mTLS). Until then
 * the token still does: a certificate whose reply was lost must not lock its agent out.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE agents ADD COLUMN certificate_used_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE agents DROP COLUMN certificate_used_at');
}
