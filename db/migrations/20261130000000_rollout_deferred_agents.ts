import type { Knex } from 'knex';

/**
 * Agents a rollout deferred (offline when their batch was pushed, strategy `offlineAgents:
 * defer`) are looked for at every poll of a running rollout's wait, and of a finished one's
 * late arrivals: a partial index holds just them, so the look costs nothing when there are none.
 * `rollout_agents.state` is text without a check, so `deferred` needs no change to the column.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX rollout_agents_deferred ON rollout_agents (rollout_id, agent_id) WHERE state = 'deferred'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX rollout_agents_deferred');
}
