/**
 * The rollout workflow's hands: every database read and write, every push. Each activity
 * is idempotent (a retry after a worker crash finds the batch assigned, the agents claimed,
 * the results settled), so a rollout resumes with no agent pushed twice and none skipped.
 *
 * One file per concern: the rollout's state and transitions (`rollout-state.ts`), a batch's
 * agents and push (`rollout-batches.ts`), how a pushed batch settles (`rollout-settling.ts`)
 * and the rollback (`rollout-rollback.ts`); `rollout-shared.ts` holds what they share.
 */
import type { Knex } from 'knex';
import { createRolloutBatchActivities } from './rollout-batches';
import { createRolloutRollbackActivities } from './rollout-rollback';
import { createRolloutSettlingActivities } from './rollout-settling';
import { createRolloutStateActivities } from './rollout-state';

export type { LoadedRollout, TransitionResult } from './rollout-state';

/** Every activity the rollout workflow calls by name, built on one database. */
export function createRolloutActivities(db: Knex) {
  return {
    ...createRolloutStateActivities(db),
    ...createRolloutBatchActivities(db),
    ...createRolloutSettlingActivities(db),
    ...createRolloutRollbackActivities(db),
  };
}
