/**
 * What the rollout activities share: the rollout's row, its counts, and how each agent's
 * result is recorded: its `rollout.agent-updated` event and its history entry.
 */
import type { Knex } from 'knex';
import { recordRolloutHistory, type PreviousVersion } from '../db/repos/agent-history';
import { emitEvents, type NewEvent } from '../db/repos/events';
import { resultKind, type AgentHistoryKind } from '../domain/rollouts';
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
  /** A rollback's result: the version it restored (its history entry names it). */
  previous?: PreviousVersion;
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
    data: {
      rolloutId: rollout.id,
      rolloutName: rollout.name,
      agentId: agent.agent_id,
      state: agent.state,
      error: agent.error,
      ...extra,
    },
  }));
}

/** What an agent's result was about: its batch, the rollback, the health gate's verdict. */
export interface ResultContext {
  batch?: number;
  rollback?: boolean;
  healthGate?: boolean;
}

/**
 * Records agents' results in the caller's transaction: one `rollout.agent-updated` event and
 * one history entry each (its kind from the state, unless `kind` says more: a timeout, a
 * health verdict, a policy's denial, an abort).
 */
export async function recordResults(
  trx: Knex.Transaction,
  rollout: RolloutRow,
  results: AgentResult[],
  context: ResultContext = {},
  kind?: AgentHistoryKind,
): Promise<void> {
  if (results.length === 0) return;
  await emitEvents(trx, agentEvents(rollout, results, { ...context }));
  const rollback = context.rollback ?? false;
  await recordRolloutHistory(
    trx,
    rollout.id,
    results.map((result) => ({
      agentId: result.agent_id,
      kind: kind ?? resultKind(result.state, rollback),
      detail: result.error,
      batch: context.batch ?? null,
      rollback,
      version: result.previous,
    })),
  );
}

/** `recordResults` for deferred agents settled, each with its own batch (a statement or two per batch). */
export async function recordDeferredResults(
  trx: Knex.Transaction,
  rollout: RolloutRow,
  settled: SettledDeferredAgent[],
): Promise<void> {
  const byBatch = new Map<number, AgentResult[]>();
  for (const { batch, ...agent } of settled) {
    const agents = byBatch.get(batch) ?? [];
    agents.push(agent);
    byBatch.set(batch, agents);
  }
  for (const [batch, agents] of byBatch) await recordResults(trx, rollout, agents, { batch });
}

/** History entries of agents pushed (by the rollout, or its rollback's push) or that a push could not reach. */
export async function recordPushes(
  trx: Knex.Transaction,
  rollout: RolloutRow,
  agentIds: string[],
  push:
    | { kind: 'pushed'; batch: number }
    | { kind: 'rollback-pushed' | 'rollback-failed'; detail?: string; version?: PreviousVersion },
): Promise<void> {
  const [batch, detail, version] =
    push.kind === 'pushed' ? [push.batch, null, undefined] : [null, push.detail ?? null, push.version];
  await recordRolloutHistory(
    trx,
    rollout.id,
    agentIds.map((agentId) => ({ agentId, kind: push.kind, detail, batch, rollback: push.kind !== 'pushed', version })),
  );
}
