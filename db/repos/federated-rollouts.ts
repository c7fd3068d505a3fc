import { isDeepStrictEqual } from 'node:util';
import type { Knex } from 'knex';
import type { Db } from '../connection';
import { updateVersioned } from '../versioned';
import type { FederatedRolloutState, InstallationState, RolloutStrategy, RolloutTarget } from '../../domain/rollouts';

export interface FederatedRolloutRow {
  id: string;
  tenant_id: string;
  configuration_id: string;
  version: number;
  content_hash: string;
  name: string | null;
  description: string | null;
  mode: 'sequential' | 'parallel';
  state: FederatedRolloutState;
  reason: string | null;
  created_by: string;
  row_version: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/** The counts an installation reports for its rollout (GET /api/rollouts/{id}'s `progress`). */
export type InstallationProgress = Record<string, number>;

export interface InstallationRow {
  federated_rollout_id: string;
  position: number;
  /** This installation's part (its peer_id is null; so is a deleted peer's). */
  local: boolean;
  peer_id: string | null;
  installation_name: string;
  target: RolloutTarget;
  strategy: RolloutStrategy;
  state: InstallationState;
  rollout_id: string | null;
  remote_configuration_id: string | null;
  remote_version: number | null;
  progress: InstallationProgress | null;
  problem: Record<string, unknown> | null;
  updated_at: Date;
}

export type NewFederatedRollout = Pick<
  FederatedRolloutRow,
  'id' | 'tenant_id' | 'configuration_id' | 'version' | 'content_hash' | 'name' | 'description' | 'mode' | 'created_by'
>;

export type NewInstallation = Pick<InstallationRow, 'local' | 'peer_id' | 'installation_name' | 'target' | 'strategy'>;

/** The federated rollout (running) and its installations, in the order given (position 0, 1, ...). */
export async function insertFederatedRollout(
  db: Db,
  row: NewFederatedRollout,
  installations: NewInstallation[],
): Promise<{ rollout: FederatedRolloutRow; installations: InstallationRow[] }> {
  const [rollout] = await db('federated_rollouts')
    .insert({ ...row, state: 'running' })
    .returning('*');
  const inserted = await db('federated_rollout_installations')
    .insert(
      installations.map((installation, position) => ({
        ...installation,
        federated_rollout_id: row.id,
        position,
        target: JSON.stringify(installation.target),
        strategy: JSON.stringify(installation.strategy),
      })),
    )
    .returning('*');
  return { rollout: rollout as FederatedRolloutRow, installations: inserted as InstallationRow[] };
}

export async function findFederatedRollout(
  db: Db,
  tenantId: string,
  id: string,
): Promise<FederatedRolloutRow | undefined> {
  return db<FederatedRolloutRow>('federated_rollouts').where({ tenant_id: tenantId, id }).first();
}

export async function findFederatedRolloutById(db: Db, id: string): Promise<FederatedRolloutRow | undefined> {
  return db<FederatedRolloutRow>('federated_rollouts').where({ id }).first();
}

export function listFederatedRolloutsQuery(
  db: Db,
  tenantId: string,
  filters: { state?: FederatedRolloutState },
): Knex.QueryBuilder {
  const query = db('federated_rollouts').where({ tenant_id: tenantId });
  if (filters.state) query.where({ state: filters.state });
  return query.select('*');
}

export async function listInstallations(db: Db, federatedRolloutId: string): Promise<InstallationRow[]> {
  return db<InstallationRow>('federated_rollout_installations')
    .where({ federated_rollout_id: federatedRolloutId })
    .orderBy('position');
}

export async function findInstallation(
  db: Db,
  federatedRolloutId: string,
  position: number,
): Promise<InstallationRow | undefined> {
  return db<InstallationRow>('federated_rollout_installations')
    .where({ federated_rollout_id: federatedRolloutId, position })
    .first();
}

export type InstallationChanges = Partial<
  Pick<InstallationRow, 'state' | 'rollout_id' | 'remote_configuration_id' | 'remote_version' | 'progress' | 'problem'>
>;

/** Records what an installation reported; the row as it was before, and as it is now (unchanged: nothing is written). */
export async function updateInstallation(
  db: Knex.Transaction,
  federatedRolloutId: string,
  position: number,
  changes: InstallationChanges,
): Promise<{ before: InstallationRow; after: InstallationRow } | undefined> {
  const before = await db<InstallationRow>('federated_rollout_installations')
    .where({ federated_rollout_id: federatedRolloutId, position })
    .forUpdate()
    .first();
  if (!before) return undefined;
  const same = Object.entries(changes).every(([column, value]) =>
    isDeepStrictEqual(before[column as keyof InstallationChanges], value),
  );
  if (same) return { before, after: before };
  const json = (value: unknown) => (value === undefined ? undefined : value === null ? null : JSON.stringify(value));
  const [after] = await db('federated_rollout_installations')
    .where({ federated_rollout_id: federatedRolloutId, position })
    .update({
      ...changes,
      progress: json(changes.progress),
      problem: json(changes.problem),
      updated_at: db.fn.now(),
    })
    .returning('*');
  return { before, after: after as InstallationRow };
}

/**
 * Moves the federated rollout to `to` when it is in one of `from` (and at one of the accepted
 * row versions, when given). Undefined when nothing matched.
 */
export async function setFederatedRolloutState(
  db: Db,
  change: {
    id: string;
    from: readonly FederatedRolloutState[];
    to: FederatedRolloutState;
    versions?: number[];
    reason?: string | null;
  },
): Promise<FederatedRolloutRow | undefined> {
  const final = ['completed', 'failed', 'aborted', 'rolled-back'].includes(change.to);
  return updateVersioned<FederatedRolloutRow>(
    db,
    'federated_rollouts',
    { id: change.id },
    change.versions,
    {
      state: change.to,
      ...(change.reason !== undefined ? { reason: change.reason } : {}),
      finished_at: final ? db.fn.now() : null,
    },
    (query) => query.whereIn('state', change.from as FederatedRolloutState[]),
  );
}

export async function lockFederatedRollout(db: Db, id: string): Promise<FederatedRolloutRow | undefined> {
  return db<FederatedRolloutRow>('federated_rollouts').where({ id }).forUpdate().first();
}

/**
 * An installation's state changed what GET shows: a new row version (ETag), so a client
 * polling with If-None-Match sees it. (Progress moves without a new ETag.)
 */
export async function touchFederatedRollout(db: Db, id: string): Promise<void> {
  await db('federated_rollouts')
    .where({ id })
    .update({ row_version: db.raw('row_version + 1'), updated_at: db.fn.now() });
}
