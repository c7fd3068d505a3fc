/**
 * A federated rollout's own record (sender side): creating it with one part per
 * installation, and every change of its state, each with its `federation.rollout.*` event,
 * the same whether the workflow, an operator or the api (a workflow Temporal did not take)
 * made the change. What each installation's part does is its rollout there.
 */
import type { Knex } from 'knex';
import { emitEvents } from '../../db/repos/events';
import {
  insertFederatedRollout,
  lockFederatedRollout,
  setFederatedRolloutState,
  type FederatedRolloutRow,
  type InstallationRow,
  type NewFederatedRollout,
  type NewInstallation,
} from '../../db/repos/federated-rollouts';
import { FEDERATED_STATE_EVENTS, type FederatedRolloutState } from '../rollouts';

/** How a federated rollout reads in lists (without its installations). */
export function federatedRolloutSummaryView(row: FederatedRolloutRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    configurationId: row.configuration_id,
    version: row.version,
    contentHash: row.content_hash,
    mode: row.mode,
    state: row.state,
    reason: row.reason,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

/** One installation's part, as it reported it last. */
export function installationView(row: InstallationRow) {
  return {
    position: row.position,
    local: row.local,
    peerId: row.peer_id,
    name: row.installation_name,
    state: row.state,
    rolloutId: row.rollout_id,
    configurationId: row.remote_configuration_id,
    version: row.remote_version,
    progress: row.progress,
    problem: row.problem,
    target: row.target as unknown as Record<string, unknown>,
    strategy: row.strategy as unknown as Record<string, unknown>,
    updatedAt: row.updated_at.toISOString(),
  };
}

/** How a federated rollout reads, in the API and in `federation.rollout.created`. */
export function federatedRolloutView(row: FederatedRolloutRow, installations: InstallationRow[]) {
  return { ...federatedRolloutSummaryView(row), installations: installations.map(installationView) };
}

/**
 * Records a federated rollout (running) and its parts, in the order given, once every
 * installation accepted it in a dry run; its workflow is the caller's to start, after commit.
 */
export async function createFederatedRollout(
  trx: Knex.Transaction,
  rollout: NewFederatedRollout,
  installations: NewInstallation[],
): Promise<FederatedRolloutRow> {
  const created = await insertFederatedRollout(trx, rollout, installations);
  const id = created.rollout.id;
  await emitEvents(trx, [
    {
      tenantId: rollout.tenant_id,
      type: 'federation.rollout.created',
      source: '/api/federation/rollouts',
      subject: id,
      data: federatedRolloutView(created.rollout, created.installations),
    },
  ]);
  return created.rollout;
}

export interface FederatedTransition {
  federatedRolloutId: string;
  from: FederatedRolloutState[];
  to: FederatedRolloutState;
  /** If-Match: the change applies only at one of these row versions. */
  versions?: number[];
  reason?: string | null;
  /** Who made the change; `workflow` when nobody asked. */
  actor?: string;
}

export type FederatedTransitionResult =
  | { ok: true; state: FederatedRolloutState; rowVersion: number }
  | { ok: false; why: 'precondition' | 'state' | 'missing'; state?: FederatedRolloutState; rowVersion?: number };

/**
 * Moves a federated rollout from one of `from` to `to` (a conditional write) and announces
 * it. A repeat of a change that was made (a retried activity) answers where it is.
 */
export async function transitionFederatedRollout(
  trx: Knex.Transaction,
  change: FederatedTransition,
): Promise<FederatedTransitionResult> {
  const before = await lockFederatedRollout(trx, change.federatedRolloutId);
  if (!before) return { ok: false, why: 'missing' };
  if (before.state === change.to && !change.from.includes(before.state))
    return { ok: true, state: before.state, rowVersion: Number(before.row_version) };
  const row = await setFederatedRolloutState(trx, { id: change.federatedRolloutId, ...change });
  if (!row) {
    const why = change.from.includes(before.state) ? 'precondition' : 'state';
    return { ok: false, why, state: before.state, rowVersion: Number(before.row_version) };
  }
  await emitEvents(trx, [
    {
      tenantId: row.tenant_id,
      type: FEDERATED_STATE_EVENTS[row.state],
      source: `/api/federation/rollouts/${row.id}`,
      subject: row.id,
      data: {
        federatedRolloutId: row.id,
        name: row.name,
        from: before.state,
        state: row.state,
        reason: row.reason,
        actor: change.actor ?? 'workflow',
      },
    },
  ]);
  return { ok: true, state: row.state, rowVersion: Number(row.row_version) };
}
