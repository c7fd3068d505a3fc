import type { Knex } from 'knex';

/**
 * The rollout an event belongs to (CloudEvents extension attribute `rollout`): a rollout's own
 * events and each agent's `rollout.agent-updated`, whose subject is the agent. Filterable
 * (`GET /api/events?rollout=`, the hub's `subscribe { rollout }`) through a partial index.
 * Events written before it have none (no backfill: rewriting a week of events would hold up
 * the deploy, and they age out within `Events:RetentionDays`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE events ADD COLUMN rollout_id uuid;
    CREATE INDEX events_tenant_rollout ON events (tenant_id, rollout_id, seq) WHERE rollout_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE events DROP COLUMN rollout_id');
}
