import type { Knex } from 'knex';

/**
 * The rollout an event belongs to (CloudEvents extension attribute `rollout`): a rollout's own
 * events and each agent's `rollout.agent-updated`, whose subject is the agent. Filterable
 * (`GET /api/events?rollout=`, the hub's `subscribe { rollout }`) through a partial index.
 * Events kept so far get it from their data.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE events ADD COLUMN rollout_id uuid;
    UPDATE events SET rollout_id = (data->>'rolloutId')::uuid
     WHERE type LIKE 'rollout.%'
       AND data->>'rolloutId' ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
    CREATE INDEX events_tenant_rollout ON events (tenant_id, rollout_id, seq) WHERE rollout_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE events DROP COLUMN rollout_id');
}
