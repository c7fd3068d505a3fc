/**
 * The federated rollout workflow's hands: its state (conditional writes with their events),
 * each installation's part (create or find again, follow, pass operations on; see
 * rollout-parts.ts), and what each part reports, recorded on its row. Every step is
 * idempotent: a retry finds the part by its key and the row as it was left.
 *
 * One file per concern: the federated rollout's state and transitions (`rollout-state.ts`),
 * a part from creation to its end (`rollout-following.ts`) and operators' operations passed
 * on to the parts (`rollout-operations.ts`); `rollout-shared.ts` holds what they share.
 */
import type { ActivityDeps } from '..';
import { createFederatedPartActivities } from './rollout-following';
import { createFederatedOperationActivities } from './rollout-operations';
import { createFederatedStateActivities } from './rollout-state';

export { SILENT_FOR_MS, type PartOutcome } from './rollout-following';
export type { FederatedTransitionResult, LoadedFederatedRollout } from './rollout-state';

/** Every activity the federated rollout workflow calls by name, built from the activities' dependencies. */
export function createFederatedRolloutActivities(deps: ActivityDeps) {
  return {
    ...createFederatedStateActivities(deps.db),
    ...createFederatedPartActivities(deps),
    ...createFederatedOperationActivities(deps),
  };
}
