import type { Knex } from 'knex';
import type { Db } from '../connection';
import { escapeLike } from './configurations';
import { releaseRolloutAgents, retakeTouchedAgents } from './rollout-agents';
import type { RolloutState, RolloutStrategy, RolloutTarget } from '../../domain/rollouts';

export interface RolloutRow {
  id: string;
  tenant_id: string;
  /** What operators call it, and why the change is made; null when not given. */
  name: string | null;
  description: string | null;
  configuration_id: string;
  version: number;
  content_hash: string;
  target: RolloutTarget;
  strategy: RolloutStrategy;
  state: RolloutState;
  reason: string | null;
  current_batch: number;
  created_by: string;
  row_version: number;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  /** Not before then is its first batch pushed (a start before it leads to `scheduled`); null: at once. */
  start_at: Date | null;
  /** Set on a rollout a federation peer asked for: `<origin installation>:<federated rollout>:<position>`. */
  federation_key: string | null;
}

export async function insertRollout(
  db: Db,
  row: Pick<
    RolloutRow,
    | 'tenant_id'
    | 'name'
    | 'description'
    | 'configuration_id'
    | 'version'
    | 'content_hash'
    | 'target'
    | 'strategy'
    | 'created_by'
  > &
    Partial<Pick<RolloutRow, 'federation_key' | 'start_at'>>,
): Promise<RolloutRow> {
  const [inserted] = await db('rollouts')
    .insert({ ...row, target: JSON.stringify(row.target), strategy: JSON.stringify(row.strategy), state: 'pending' })
    .returning('*');
  return inserted as RolloutRow;
}

export async function findRollout(db: Db, tenantId: string, id: string): Promise<RolloutRow | undefined> {
  return db<RolloutRow>('rollouts').where({ tenant_id: tenantId, id }).first();
}

/** The rollout a federation peer asked for under `key` (its retried calls find it again). */
export async function findRolloutByFederationKey(
  db: Db,
  tenantId: string,
  key: string,
): Promise<RolloutRow | undefined> {
  return db<RolloutRow>('rollouts').where({ tenant_id: tenantId, federation_key: key }).first();
}

export async function findRolloutById(db: Db, id: string): Promise<RolloutRow | undefined> {
  return db<RolloutRow>('rollouts').where({ id }).first();
}

/** The rollout, locked for the rest of the transaction (transitions are serialised on it). */
export async function lockRollout(db: Db, id: string): Promise<RolloutRow | undefined> {
  return db<RolloutRow>('rollouts').where({ id }).forUpdate().first();
}

export interface RolloutFilters {
  state?: RolloutState;
  configurationId?: string;
  createdBy?: string;
  /** Part of the name, case-insensitive. */
  q?: string;
}

export function listRolloutsQuery(db: Db, tenantId: string, filters: RolloutFilters): Knex.QueryBuilder {
  const query = db('rollouts').where({ tenant_id: tenantId });
  if (filters.state) query.where({ state: filters.state });
  if (filters.configurationId) query.where({ configuration_id: filters.configurationId });
  if (filters.createdBy) query.where({ created_by: filters.createdBy });
  if (filters.q) query.whereRaw("name ILIKE ? ESCAPE '\\'", [`%${escapeLike(filters.q)}%`]);
  return query.select('*');
}

// ---------------------------------------------------------------------------------------
// State

/**
 * Moves the rollout to `to` when it is in one of `from` (and, when given, at one of the
 * accepted row versions): the conditional UPDATE behind every transition. Leaving for a
 * final state releases its agents (`active = false`). Undefined when nothing matched.
 */
export async function setRolloutState(
  db: Db,
  change: {
    id: string;
    from: readonly RolloutState[];
    to: RolloutState;
    versions?: number[];
    reason?: string | null;
    currentBatch?: number;
  },
): Promise<RolloutRow | undefined> {
  const changes: Record<string, unknown> = {
    state: change.to,
    row_version: db.raw('row_version + 1'),
    updated_at: db.fn.now(),
  };
  if (change.reason !== undefined) changes.reason = change.reason;
  if (change.currentBatch !== undefined) changes.current_batch = change.currentBatch;
  if (change.to === 'running') changes.started_at = db.raw('coalesce(started_at, now())');
  if (FINAL.has(change.to)) changes.finished_at = db.fn.now();
  if (change.to === 'rolling-back') changes.finished_at = null;
  const query = db('rollouts')
    .where({ id: change.id })
    .whereIn('state', change.from as RolloutState[])
    .update(changes)
    .returning('*');
  if (change.versions) query.whereIn('row_version', change.versions);
  const [row] = (await query) as RolloutRow[];
  if (row && FINAL.has(change.to)) await releaseRolloutAgents(db, change.id);
  // Rolling back pushes again: the touched agents are this rollout's until it is rolled back.
  if (row && change.to === 'rolling-back') await retakeTouchedAgents(db, change.id);
  return row;
}

const FINAL = new Set<RolloutState>(['completed', 'failed', 'aborted', 'rolled-back']);

/**
 * A new batch changes what GET shows, so it is a new row version (ETag): a client polling
 * with If-None-Match sees each batch. (Counts move within a batch without a new ETag.)
 */
export async function setCurrentBatch(db: Db, id: string, batch: number): Promise<void> {
  await db('rollouts')
    .where({ id })
    .whereNot({ current_batch: batch })
    .update({ current_batch: batch, row_version: db.raw('row_version + 1'), updated_at: db.fn.now() });
}

/** Locks the rollout row against transitions for the rest of the transaction; its state. */
export async function lockRolloutState(db: Db, id: string): Promise<RolloutState | undefined> {
  const row = await db('rollouts').select('state').where({ id }).forShare().first();
  return row?.state;
}
