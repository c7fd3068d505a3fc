import type { Db } from '../../connection';
import type { AgentStatus } from './inventory';

/**
 * The configuration each agent should run (`desired_*`, written by pushes) and what it
 * reported of it (`applied_*`).
 */

export interface DesiredConfiguration {
  configurationId: string;
  version: number;
  /** sha256 (hex) of the content. */
  hash: string;
}

/** The desired configuration of these agents (for a push notification: one query for the batch). */
export async function findDesired(
  db: Db,
  ids: string[],
): Promise<Array<{ id: string; configurationId: string; version: number; hash: string }>> {
  const rows: Array<{ id: string; desired_configuration_id: string; desired_version: number; desired_hash: string }> =
    await db('agents')
      .select('id', 'desired_configuration_id', 'desired_version', 'desired_hash')
      .whereRaw('id = ANY(?::uuid[])', [ids]) // one parameter: a resync asks for every live session
      .whereNotNull('desired_hash');
  return rows.map((row) => ({
    id: row.id,
    configurationId: row.desired_configuration_id,
    version: row.desired_version,
    hash: row.desired_hash,
  }));
}

/**
 * Locks the agents' rows in id order, the order report batches, pings and the liveness
 * sweep lock theirs in: an UPDATE over many ids locks in whatever order its plan visits
 * them, and two writers locking overlapping rows in different orders deadlock. A
 * transaction that pushes several times (a rollback, one push per previous version) locks
 * all its agents first.
 */
export async function lockAgentRows(db: Db, tenantId: string, agentIds: readonly string[]): Promise<void> {
  await db.raw(
    `SELECT count(*) FROM (SELECT id FROM agents WHERE tenant_id = ? AND id = ANY(?::uuid[]) ORDER BY id FOR NO KEY UPDATE) locked`,
    [tenantId, agentIds as string[]],
  );
}

/**
 * Sets the desired configuration of the tenant's agents among `agentIds`, except those in
 * one of `excludedStatuses`; returns the ids of the agents written. Lock the rows first
 * (lockAgentRows).
 */
export async function setDesiredConfiguration(
  db: Db,
  tenantId: string,
  agentIds: readonly string[],
  excludedStatuses: readonly AgentStatus[],
  desired: DesiredConfiguration,
): Promise<string[]> {
  const rows: Array<{ id: string }> = await db('agents')
    .where({ tenant_id: tenantId })
    .whereRaw('id = ANY(?::uuid[])', [agentIds as string[]]) // one parameter, however many agents
    .whereNotIn('status', excludedStatuses as AgentStatus[])
    .update({
      desired_configuration_id: desired.configurationId,
      desired_version: desired.version,
      desired_hash: desired.hash,
      updated_at: db.fn.now(),
      row_version: db.raw('row_version + 1'),
    } as never)
    .returning('id');
  return rows.map((row) => row.id);
}

export interface AppliedRow {
  id: string;
  applied_hash: string | null;
  applied_status: string | null;
  applied_error: string | null;
}

/** What the tenant's agents among `agentIds` last reported applying (ids of no agent are left out). */
export async function findApplied(db: Db, tenantId: string, agentIds: readonly string[]): Promise<AppliedRow[]> {
  return db('agents')
    .select('id', 'applied_hash', 'applied_status', 'applied_error')
    .where({ tenant_id: tenantId })
    .whereRaw('id = ANY(?::uuid[])', [agentIds as string[]]);
}
