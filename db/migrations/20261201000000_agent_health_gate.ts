import type { Knex } from 'knex';

/**
 * What a rollout's health gate (strategy `healthGate`, docs/rollouts.md) reads of an agent
 * after it applied a version:
 * - `agents.unhealthy_since`: since when the agent's reported ComponentHealth has been
 *   unhealthy (null while healthy or never reported); set by every report that carries health.
 * - `agents.disconnects`: how many times the agent's connection dropped (its socket closed or
 *   it said goodbye; not a replica stopping, which is not the agent's doing).
 * - `rollout_agents.disconnects_at_apply`: `agents.disconnects` when the agent's report
 *   settled it in the rollout, so the gate counts only the drops since.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE agents ADD COLUMN unhealthy_since timestamptz, ADD COLUMN disconnects integer NOT NULL DEFAULT 0;
    ALTER TABLE rollout_agents ADD COLUMN disconnects_at_apply integer;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE rollout_agents DROP COLUMN disconnects_at_apply;
    ALTER TABLE agents DROP COLUMN unhealthy_since, DROP COLUMN disconnects;
  `);
}
