/**
 * The federated rollout workflow's hands: its state (conditional writes with their events),
 * each installation's part (create or find again, follow, pass operations on; see
 * rollout-parts.ts), and what each part reports, recorded on its row. Every step is
 * idempotent: a retry finds the part by its key and the row as it was left.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { isDeepStrictEqual } from 'node:util';
import { emitEvents } from '../../db/repos/events';
import {
  findFederatedRolloutById,
  findInstallation,
  listInstallations,
  lockFederatedRollout,
  setFederatedRolloutState,
  touchFederatedRollout,
  updateInstallation,
  type InstallationChanges,
} from '../../db/repos/federated-rollouts';
import { installationId } from '../../db/repos/installation';
import { federationKey } from '../../domain/federation/rollout-calls';
import {
  FEDERATED_STATE_EVENTS,
  type FederatedRolloutState,
  FINAL_ROLLOUT_STATES,
  type InstallationState,
  ROLLOUT_TRANSITIONS,
  type RolloutOperation,
  type RolloutState,
} from '../../domain/rollouts';
import type { ActivityDeps } from '..';
import { whileHeartbeating } from '../keep-alive';
import { partOf, PEER_SILENT, type PartContext, type PartStatus } from './rollout-parts';

/** How often a part's state is read while it is followed (and the activity heartbeats). */
const FOLLOW_EVERY_MS = 2_000;
/** A peer silent this long while followed is `unreachable`: the federated rollout pauses. */
export const SILENT_FOR_MS = 30_000;

const source = (id: string) => `/api/federation/rollouts/${id}`;

/** The operation a part's rollout is brought in line with when the federated rollout is in this state. */
const CAUGHT_UP: Partial<Record<FederatedRolloutState, RolloutOperation>> = {
  paused: 'pause',
  aborted: 'abort',
  'rolling-back': 'rollback',
};

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

/** A part's state once created or followed to its end, and why, when it did not go well. */
export interface PartOutcome {
  state: InstallationState;
  reason?: string;
}

type Part = { federatedRolloutId: string; position: number };

export function createFederatedRolloutActivities(deps: ActivityDeps) {
  const { db, logger } = deps;

  async function contextOf({ federatedRolloutId, position }: Part): Promise<PartContext> {
    const rollout = await findFederatedRolloutById(db, federatedRolloutId);
    const installation = await findInstallation(db, federatedRolloutId, position);
    if (!rollout || !installation)
      throw new Error(`federated rollout ${federatedRolloutId}/${position} does not exist`);
    return { rollout, installation, key: federationKey(await installationId(db), federatedRolloutId, position) };
  }

  /** Records what the part reported; a change is announced, and a new state is a new ETag. */
  async function record({ federatedRolloutId, position }: Part, changes: InstallationChanges): Promise<void> {
    await db.transaction(async (trx) => {
      const updated = await updateInstallation(trx, federatedRolloutId, position, changes);
      if (!updated) return;
      const { before, after } = updated;
      const changed = (['state', 'progress', 'problem', 'rollout_id'] as const).some(
        (column) => !isDeepStrictEqual(before[column], after[column]),
      );
      if (!changed) return;
      if (before.state !== after.state) await touchFederatedRollout(trx, federatedRolloutId);
      const rollout = (await findFederatedRolloutById(trx, federatedRolloutId))!;
      await emitEvents(trx, [
        {
          tenantId: rollout.tenant_id,
          type: 'federation.rollout.installation-updated',
          source: source(federatedRolloutId),
          subject: federatedRolloutId,
          data: {
            federatedRolloutId,
            position,
            installation: after.installation_name,
            peerId: after.peer_id,
            state: after.state,
            rolloutId: after.rollout_id,
            progress: after.progress,
            problem: after.problem,
          },
        },
      ]);
    });
  }

  const reported = (status: PartStatus): InstallationChanges => ({
    state: status.state as InstallationState,
    rollout_id: status.rolloutId,
    remote_configuration_id: status.configurationId,
    remote_version: status.version,
    progress: status.progress,
    problem: null,
  });

  /**
   * A part whose rollout runs on while the federated rollout was paused, aborted or rolled
   * back (it was created meanwhile, or the operation did not reach its peer) is told again.
   * Never a resume: a part that paused itself (its failures) waits for an operator.
   */
  async function catchUp(part: Part, reading: ReturnType<typeof partOf>, status: PartStatus): Promise<void> {
    const federated = (await findFederatedRolloutById(db, part.federatedRolloutId))!;
    const wanted = CAUGHT_UP[federated.state];
    if (!wanted || !(ROLLOUT_TRANSITIONS[wanted].from as readonly string[]).includes(status.state)) return;
    await reading
      .operate(wanted, `federated rollout ${federated.name ?? federated.id}`)
      .catch((error: unknown) => logger?.warn({ err: error, ...part, operation: wanted }, 'a part did not catch up'));
  }

  /**
   * May the part, last seen in `state`, take the operation? Only a final state is sure (a
   * rollback alone leaves one); any other may have moved since it was read, so the part is
   * asked and answers for itself (a refusal is left).
   */
  const takes = (state: InstallationState, operation: RolloutOperation) =>
    operation === 'rollback' || !(FINAL_ROLLOUT_STATES as readonly string[]).includes(state);

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

    /** Creates the part's rollout (or finds it again) and starts it; a refusal is recorded with its problem. */
    async createFederatedPart(part: Part): Promise<PartOutcome> {
      const context = await contextOf(part);
      const creation = await partOf(deps, context).create();
      if (creation.created) {
        await record(part, reported(creation.status));
        return { state: creation.status.state as InstallationState };
      }
      await record(part, { state: creation.state, problem: creation.problem });
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
      const context = await contextOf(part);
      const name = context.installation.installation_name;
      const reading = partOf(deps, context);
      let silentSince: number | undefined;
      for (;;) {
        try {
          // A read, a record and a catch-up can take a peer's deadline each: heartbeats go on meanwhile.
          const status = await whileHeartbeating(async () => {
            const read = await reading.status();
            await record(part, reported(read));
            await catchUp(part, reading, read);
            return read;
          });
          silentSince = undefined;
          if (FINAL_ROLLOUT_STATES.includes(status.state as RolloutState))
            return { state: status.state as InstallationState, reason: status.reason ?? undefined };
        } catch (error) {
          if (!(error instanceof ApplicationFailure && error.type === PEER_SILENT)) throw error;
          silentSince ??= Date.now();
          if (Date.now() - silentSince >= SILENT_FOR_MS) {
            await record(part, { state: 'unreachable', problem: { detail: error.message } });
            return { state: 'unreachable', reason: `peer '${name}' stopped answering (${error.message})` };
          }
        }
        await Context.current().sleep(FOLLOW_EVERY_MS); // a cancellation ends the wait here
      }
    },

    async markFederatedPartUnreachable(part: Part & { error: string }): Promise<void> {
      await record(part, { state: 'unreachable', problem: { detail: part.error } });
    },

    /**
     * Passes an operation on to every part that has a rollout and can take it (or only to
     * `positions`), all at once. A part that refuses or does not answer is logged and left:
     * its state, as followed, tells what it did.
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
            await partOf(deps, await contextOf(part)).operate(request.operation, request.actor);
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
