/**
 * An operator's operation on a federated rollout, passed on to its parts' rollouts (here, or
 * on a peer through its incoming endpoint).
 */
import { listInstallations } from '../../db/repos/federated-rollouts';
import { FINAL_ROLLOUT_STATES, type InstallationState, type RolloutOperation } from '../../domain/rollouts';
import type { ActivityDeps } from '..';
import { partOf } from './rollout-parts';
import { contextOf, record, reported } from './rollout-shared';

/**
 * May the part, last seen in `state`, take the operation? Only a final state is sure (a
 * rollback alone leaves one); any other may have moved since it was read, so the part is
 * asked and answers for itself (a refusal is left).
 */
const takes = (state: InstallationState, operation: RolloutOperation) =>
  operation === 'rollback' || !(FINAL_ROLLOUT_STATES as readonly string[]).includes(state);

/** `operateFederatedParts`: an operation passed on to the parts that can take it. */
export function createFederatedOperationActivities(deps: ActivityDeps) {
  const { db, logger } = deps;
  return {
    /**
     * Passes an operation on to every part that has a rollout and can take it (or only to
     * `positions`), all at once, and records each part's state as it answers (so the
     * operation's answer shows the parts after it). A part that refuses or does not answer is
     * logged and left: its state, as followed, tells what it did.
     */
    async operateFederatedParts(request: {
      federatedRolloutId: string;
      operation: RolloutOperation;
      actor: string;
      positions?: number[];
    }): Promise<void> {
      const parts = await listInstallations(db, request.federatedRolloutId);
      const chosen = parts.filter(
        (part) =>
          part.rollout_id !== null &&
          (!request.positions || request.positions.includes(part.position)) &&
          takes(part.state, request.operation),
      );
      await Promise.all(
        chosen.map(async ({ position }) => {
          const part = { federatedRolloutId: request.federatedRolloutId, position };
          try {
            const status = await partOf(deps, await contextOf(db, part)).operate(request.operation, request.actor);
            // Recorded now, so the operation's answer lists each part as it is after it.
            if (status) await record(db, part, reported(status));
          } catch (error) {
            logger?.warn(
              { err: error, ...part, operation: request.operation },
              'a federated rollout part did not take the operation',
            );
          }
        }),
      );
    },
  };
}
