/**
 * A federated rollout's state as the workflow reads and changes it: loading it when a run
 * starts, and every transition (domain/federation/federated-rollouts.ts: a conditional write
 * with its `federation.rollout.*` event).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { findFederatedRolloutById, listInstallations } from '../../db/repos/federated-rollouts';
import {
  transitionFederatedRollout,
  type FederatedTransition,
  type FederatedTransitionResult,
} from '../../domain/federation/federated-rollouts';
import type { FederatedRolloutState } from '../../domain/rollouts';

export interface LoadedFederatedRollout {
  state: FederatedRolloutState;
  rowVersion: number;
  reason: string | null;
  mode: 'sequential' | 'parallel';
  parts: Array<{ position: number; name: string; local: boolean; started: boolean }>;
}

export type { FederatedTransitionResult };

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

    async transitionFederatedRollout(change: FederatedTransition): Promise<FederatedTransitionResult> {
      return db.transaction((trx) => transitionFederatedRollout(trx, change));
    },
  };
}
