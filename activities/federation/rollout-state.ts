/**
 * A federated rollout's state as the workflow reads and changes it: loading it when a run
 * starts, and every transition (a conditional write) with its `federation.rollout.*` event.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { emitEvents } from '../../db/repos/events';
import {
  findFederatedRolloutById,
  listInstallations,
  lockFederatedRollout,
  setFederatedRolloutState,
} from '../../db/repos/federated-rollouts';
import { FEDERATED_STATE_EVENTS, type FederatedRolloutState } from '../../domain/rollouts';
import { source } from './rollout-shared';

export interface LoadedFederatedRollout {
  state: FederatedRolloutState;
  rowVersion: number;
  reason: string | null;
  mode: 'sequential' | 'parallel';
  parts: Array<{ position: number; name: string; local: boolean; started: boolean }>;
}

export type FederatedTransitionResult =
  | { ok: true; state: FederatedRolloutState; rowVersion: number }
  | { ok: false; why: 'precondition' | 'state' | 'missing'; state?: FederatedRolloutState; rowVersion?: number };

/** `loadFederatedRollout` and `transitionFederatedRollout`: reading a federated rollout's state and changing it. */
export function createFederatedStateActivities(db: Knex) {
  return {
    async loadFederatedRollout(federatedRolloutId: string): Promise<LoadedFederatedRollout> {
      const row = await findFederatedRolloutById(db, federatedRolloutId);
      if (!row)
        throw ApplicationFailure.retryable(`federated rollout ${federatedRolloutId} is not in the database (yet)`);
      const parts = await listInstallations(db, federatedRolloutId);
      return {
        state: row.state,
        rowVersion: Number(row.row_version),
        reason: row.reason,
        mode: row.mode,
        parts: parts.map((part) => ({
          position: part.position,
          name: part.installation_name,
          local: part.local,
          started: part.rollout_id !== null,
        })),
      };
    },

    async transitionFederatedRollout(change: {
      federatedRolloutId: string;
      from: FederatedRolloutState[];
      to: FederatedRolloutState;
      versions?: number[];
      reason?: string | null;
      actor?: string;
    }): Promise<FederatedTransitionResult> {
      return db.transaction(async (trx) => {
        const before = await lockFederatedRollout(trx, change.federatedRolloutId);
        if (!before) return { ok: false as const, why: 'missing' as const };
        // A retry after the first attempt committed finds the federated rollout where it was sent.
        if (before.state === change.to && !change.from.includes(before.state))
          return { ok: true as const, state: before.state, rowVersion: Number(before.row_version) };
        const row = await setFederatedRolloutState(trx, { id: change.federatedRolloutId, ...change });
        if (!row) {
          const why = change.from.includes(before.state) ? ('precondition' as const) : ('state' as const);
          return { ok: false as const, why, state: before.state, rowVersion: Number(before.row_version) };
        }
        await emitEvents(trx, [
          {
            tenantId: row.tenant_id,
            type: FEDERATED_STATE_EVENTS[row.state],
            source: source(row.id),
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
        return { ok: true as const, state: row.state, rowVersion: Number(row.row_version) };
      });
    },
  };
}
