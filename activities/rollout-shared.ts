/**
 * What the rollout activities share: the rollout's row, its counts, and the
 * `rollout.agent-updated` events that record each agent's result.
 */
import type { Knex } from 'knex';
import type { NewEvent } from '../db/repos/events';
import { rolloutProgress, type SettledAgent, type SettledDeferredAgent } from '../db/repos/rollout-agents';
import { findRolloutById, type RolloutRow } from '../db/repos/rollouts';
import type { RolloutCounts } from '../workflows/definitions';

/** How often a waiting activity looks for agents' reports (and heartbeats). */
export const POLL_MS = 250;

/** The CloudEvents `source` of a rollout's events. */
export const source = (id: string) => `/api/rollouts/${id}`;

/** The rollout's row; a rollout that does not exist (any more) fails the activity. */
export async function loadRolloutRow(db: Knex, rolloutId: string): Promise<RolloutRow> {
  const row = await findRolloutById(db, rolloutId);
  if (!row) throw new Error(`rollout ${rolloutId} does not exist`);
  return row;
}

/** The rollout's progress and rollback counts, as the workflow reports them. */
export async function countsOf(db: Knex, rolloutId: string): Promise<RolloutCounts> {
  const { progress, rollback } = await rolloutProgress(db, rolloutId);
  return { progress, rollback };
}

export type AgentResult = {
  agent_id: string;
  state: SettledAgent['state'] | 'skipped' | 'deferred';
  error: string | null;
};

/** One `rollout.agent-updated` event per agent result (`extra` adds e.g. the batch). */
export function agentEvents(
  rollout: RolloutRow,
  settled: AgentResult[],
  extra: Record<string, unknown> = {},
): NewEvent[] {
  return settled.map((agent) => ({
    tenantId: rollout.tenant_id,
    type: 'rollout.agent-updated',
    source: source(rollout.id),
    subject: agent.agent_id,
    data: { rolloutId: rollout.id, agentId: agent.agent_id, state: agent.state, error: agent.error, ...extra },
  }));
}

/** One `rollout.agent-updated` per deferred agent settled, each with its own batch. */
export function deferredEvents(rollout: RolloutRow, settled: SettledDeferredAgent[]): NewEvent[] {
  return settled.flatMap(({ batch, ...agent }) => agentEvents(rollout, [agent], { batch }));
}
