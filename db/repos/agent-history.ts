import type { Knex } from 'knex';
import type { Db } from '../connection';
import type { AgentHistoryKind } from '../../domain/rollouts';

/** One thing that happened to an agent in a rollout (`agent_history`). */
export interface NewHistoryEntry {
  agentId: string;
  kind: AgentHistoryKind;
  /** The agent's message, the reason, the timeout. */
  detail: string | null;
  /** Null: the batch the agent is in. */
  batch: number | null;
  /** A rollback's entry: its version is the one the agent had before the rollout. */
  rollback: boolean;
}

/**
 * Records entries of one rollout in one statement, each with the version it is about (the
 * rollout's, or for a rollback's the agent's previous one) and its batch. Only a rollback's
 * entries, or entries without their batch, read the agents' rollout rows.
 */
export async function recordRolloutHistory(db: Db, rolloutId: string, entries: NewHistoryEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const readsRows = entries.some((e) => e.rollback || e.batch === null);
  const columns = readsRows
    ? `coalesce(e.batch, ra.batch), e.kind, e.detail,
       CASE WHEN e.rollback THEN ra.previous_configuration_id ELSE r.configuration_id END,
       CASE WHEN e.rollback THEN ra.previous_version ELSE r.version END,
       CASE WHEN e.rollback THEN ra.previous_hash ELSE r.content_hash END`
    : 'e.batch, e.kind, e.detail, r.configuration_id, r.version, r.content_hash';
  await db.raw(
    `INSERT INTO agent_history (tenant_id, agent_id, rollout_id, batch, kind, detail, configuration_id, version, content_hash)
     SELECT r.tenant_id, e.agent_id, r.id, ${columns}
       FROM unnest(?::uuid[], ?::text[], ?::text[], ?::int[], ?::boolean[]) AS e(agent_id, kind, detail, batch, rollback)
       JOIN rollouts r ON r.id = ?
       ${readsRows ? 'LEFT JOIN rollout_agents ra ON ra.rollout_id = r.id AND ra.agent_id = e.agent_id' : ''}`,
    [
      entries.map((e) => e.agentId),
      entries.map((e) => e.kind),
      entries.map((e) => e.detail),
      entries.map((e) => e.batch),
      entries.map((e) => e.rollback),
      rolloutId,
    ] as Knex.Value[],
  );
}

export interface AgentHistoryRow {
  seq: string;
  agent_id: string;
  at: Date;
  kind: AgentHistoryKind;
  rollout_id: string | null;
  rollout_name: string | null;
  rollout_created_by: string | null;
  batch: number | null;
  configuration_id: string | null;
  version: number | null;
  content_hash: string | null;
  detail: string | null;
}

/** An agent's history (optionally in one rollout), with the rollout's name and creator, for keyset pages by `seq`. */
export function agentHistoryQuery(
  db: Db,
  tenantId: string,
  agentId: string,
  filters: { rolloutId?: string } = {},
): Knex.QueryBuilder {
  const query = db('agent_history as h')
    .leftJoin('rollouts as r', 'r.id', 'h.rollout_id')
    .where({ 'h.tenant_id': tenantId, 'h.agent_id': agentId });
  if (filters.rolloutId) query.where({ 'h.rollout_id': filters.rolloutId });
  return query.select('h.*', 'r.name as rollout_name', 'r.created_by as rollout_created_by');
}
