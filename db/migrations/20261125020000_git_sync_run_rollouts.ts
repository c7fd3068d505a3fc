import type { Knex } from 'knex';

/**
 * Every rollout a sync run's template created, written in the rollout's own transaction, so
 * a sweep retried after its worker died starts the workflows of the rollouts the first
 * attempt created (its files now look unchanged, so it would not create them again).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE git_sync_runs ADD COLUMN rollout_ids uuid[] NOT NULL DEFAULT '{}'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE git_sync_runs DROP COLUMN rollout_ids');
}
