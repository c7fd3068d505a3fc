import type { Knex } from 'knex';

/**
 * Room on each page of `rollout_agents` for a row's next version: a rollback's claim and its
 * settling each rewrite every touched row (`rollback_state`, which no index holds), and with
 * room beside the row Postgres writes that version on the same page without touching the
 * table's indexes (a HOT update). Pages written from now on keep 30 % free.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rollout_agents SET (fillfactor = 70)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE rollout_agents RESET (fillfactor)');
}
