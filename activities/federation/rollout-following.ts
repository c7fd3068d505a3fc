/**
 * A part's life as the workflow follows it: its rollout created (or found again) on its
 * installation, followed to its end with each change recorded and brought in line with the
 * federated rollout, or marked unreachable when its peer stops answering.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { findFederatedRolloutById } from '../../db/repos/federated-rollouts';
import {
  type FederatedRolloutState,
  FINAL_ROLLOUT_STATES,
  type InstallationState,
  ROLLOUT_TRANSITIONS,
  type RolloutOperation,
  type RolloutState,
} from '../../domain/rollouts';
import type { ActivityDeps } from '..';
import { whileHeartbeating } from '../keep-alive';
import { partOf, PEER_SILENT, type PartStatus } from './rollout-parts';
import { contextOf, type Part, record, reported } from './rollout-shared';

/** How often a part's state is read while it is followed (and the activity heartbeats). */
const FOLLOW_EVERY_MS = 2_000;
/** A peer silent this long while followed is `unreachable`: the federated rollout pauses. */
export const SILENT_FOR_MS = 30_000;

/** The operation a part's rollout is brought in line with when the federated rollout is in this state. */
const CAUGHT_UP: Partial<Record<FederatedRolloutState, RolloutOperation>> = {
  paused: 'pause',
  aborted: 'abort',
  'rolling-back': 'rollback',
};

/** A part's state once created or followed to its end, and why, when it did not go well. */
export interface PartOutcome {
  state: InstallationState;
  reason?: string;
}

/**
 * A part whose rollout runs on while the federated rollout was paused, aborted or rolled
 * back (it was created meanwhile, or the operation did not reach its peer) is told again.
 * Never a resume: a part that paused itself (its failures) waits for an operator.
 */
async function catchUp(
  { db, logger }: ActivityDeps,
  part: Part,
  reading: ReturnType<typeof partOf>,
  status: PartStatus,
): Promise<void> {
  const federated = (await findFederatedRolloutById(db, part.federatedRolloutId))!;
  const wanted = CAUGHT_UP[federated.state];
  if (!wanted || !(ROLLOUT_TRANSITIONS[wanted].from as readonly string[]).includes(status.state)) return;
  await reading
    .operate(wanted, `federated rollout ${federated.name ?? federated.id}`)
    .catch((error: unknown) => logger?.warn({ err: error, ...part, operation: wanted }, 'a part did not catch up'));
}

/** `createFederatedPart`, `followFederatedPart` and `markFederatedPartUnreachable`: a part from creation to its end. */
export function createFederatedPartActivities(deps: ActivityDeps) {
  const { db } = deps;
  return {
    /** Creates the part's rollout (or finds it again) and starts it; a refusal is recorded with its problem. */
    async createFederatedPart(part: Part): Promise<PartOutcome> {
      const context = await contextOf(db, part);
      const creation = await partOf(deps, context).create();
      if (creation.created) {
        await record(db, part, reported(creation.status));
        return { state: creation.status.state as InstallationState };
      }
      await record(db, part, { state: creation.state, problem: creation.problem });
      const detail = typeof creation.problem.detail === 'string' ? creation.problem.detail : 'no detail';
      return {
        state: creation.state,
        reason: `installation '${context.installation.installation_name}' ${creation.state === 'denied' ? 'denied' : 'refused'} the rollout: ${detail}`,
      };
    },

    /**
     * Follows the part's rollout until it ends, recording each change. A peer silent for
     * SILENT_FOR_MS ends the wait as `unreachable` (recorded with what it last failed with).
     */
    async followFederatedPart(part: Part): Promise<PartOutcome> {
      const context = await contextOf(db, part);
      const name = context.installation.installation_name;
      const reading = partOf(deps, context);
      let silentSince: number | undefined;
      for (;;) {
        try {
          // A read, a record and a catch-up can take a peer's deadline each: heartbeats go on meanwhile.
          const status = await whileHeartbeating(async () => {
            const read = await reading.status();
            await record(db, part, reported(read));
            await catchUp(deps, part, reading, read);
            return read;
          });
          silentSince = undefined;
          if (FINAL_ROLLOUT_STATES.includes(status.state as RolloutState))
            return { state: status.state as InstallationState, reason: status.reason ?? undefined };
        } catch (error) {
          if (!(error instanceof ApplicationFailure && error.type === PEER_SILENT)) throw error;
          silentSince ??= Date.now();
          if (Date.now() - silentSince >= SILENT_FOR_MS) {
            await record(db, part, { state: 'unreachable', problem: { detail: error.message } });
            return { state: 'unreachable', reason: `peer '${name}' stopped answering (${error.message})` };
          }
        }
        await Context.current().sleep(FOLLOW_EVERY_MS); // a cancellation ends the wait here
      }
    },

    async markFederatedPartUnreachable(part: Part & { error: string }): Promise<void> {
      await record(db, part, { state: 'unreachable', problem: { detail: part.error } });
    },
  };
}
