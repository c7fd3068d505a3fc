import type { Knex } from 'knex';
import type { Db } from '../connection';
import type { AgentHistoryKind } from '../../domain/rollouts';

/** One thing that happened to an agent in a rollout (`agent_history`). */
export interface NewHistoryEntry {
  agentId: string;
  kind: AgentHistoryKind;
  /** The agent's message, the reason, the timeout. */
  detail: string | null;
  /** The rollout's batch it was in; null for the rollback's entries (a rollback has no batches). */
  batch: number | null;
  /** A rollback's entry: its version is the one the agent had before the rollout. */
  rollback: boolean;
  /** A rollback entry's version when the caller knows it (else read from the agent's rollout row). */
  version?: PreviousVersion;
}

/** The version an agent had before a rollout, which its rollback restores. */
export interface PreviousVersion {
  configurationId: string;
  version: number;
  hash: string | null;
}

/**
 * Records entries of one rollout in one statement, each with the version it is about: the
 * rollout's, or a rollback's, the agent's previous one (read from the agents' rollout rows
 * only for rollback entries that do not carry it).
 */
export async function recordRolloutHistory(db: Db, rolloutId: string, entries: NewHistoryEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const readsRows = entries.some((e) => e.rollback && !e.version);
  const previous = (column: string) => (readsRows ? `ra.previous_${column}` : 'NULL');
  await db.raw(
    `INSERT INTO agent_history (tenant_id, agent_id, rollout_id, batch, kind, detail, configuration_id, version, content_hash)
     SELECT r.tenant_id, e.agent_id, r.id, e.batch, e.kind, e.detail,
            CASE WHEN e.rollback THEN coalesce(e.configuration_id, ${previous('configuration_id')}) ELSE r.configuration_id END,
            CASE WHEN e.rollback THEN coalesce(e.version, ${previous('version')}) ELSE r.version END,
            CASE WHEN e.rollback THEN coalesce(e.hash, ${previous('hash')}) ELSE r.content_hash END
       FROM unnest(?::uuid[], ?::text[], ?::text[], ?::int[], ?::boolean[], ?::uuid[], ?::int[], ?::text[])
              AS e(agent_id, kind, detail, batch, rollback, configuration_id, version, hash)
       JOIN rollouts r ON r.id = ?
       ${readsRows ? 'LEFT JOIN rollout_agents ra ON ra.rollout_id = r.id AND ra.agent_id = e.agent_id' : ''}`,
    [
      entries.map((e) => e.agentId),
      entries.map((e) => e.kind),
      entries.map((e) => e.detail),
      entries.map((e) => e.batch),
      entries.map((e) => e.rollback),
      entries.map((e) => e.version?.configurationId ?? null),
      entries.map((e) => e.version?.version ?? null),
      entries.map((e) => e.version?.hash ?? null),
      rolloutId,
    ] as Knex.Value[],
  );
}

/**
 * Deletes up to `batch` of the oldest entries written before `before`; answers how many. It
 * reads only the head of the table in `seq` order (entries are written in time order), so
 * a sweep with nothing to delete costs one index page, not a scan.
 */
export async function pruneAgentHistory(db: Db, before: Date, batch = 10_000): Promise<number> {
  const result = await db.raw(
    `WITH head AS (SELECT seq, at FROM agent_history ORDER BY seq LIMIT ?)
     DELETE FROM agent_history WHERE seq IN (SELECT seq FROM head WHERE at < ?)`,
    [batch, before],
  );
  return result.rowCount ?? 0;
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
