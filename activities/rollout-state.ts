/**
 * A rollout's state as the workflow reads and changes it: loading the rollout when a run
 * starts, and every transition with its `rollout.*` event.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { findConfiguration } from '../db/repos/configurations';
import { emitEvents } from '../db/repos/events';
import { failApplying, skipPendingAgents, withdrawDeferred } from '../db/repos/rollout-agents';
import { findRolloutById, lockRollout, setRolloutState, type RolloutRow } from '../db/repos/rollouts';
import {
  ABANDONED_BY_ABORT,
  NEVER_CAME_ONLINE,
  NEVER_PUSHED,
  ROLLBACK_OF_DEFERRED,
  ROLLOUT_STATE_EVENTS,
  type RolloutState,
} from '../domain/rollouts';
import type { RolloutCounts } from '../workflows/definitions';
import { describeRollout } from '../workflows/rollout-start';
import { countsOf, recordDeferredResults, recordResults, source } from './rollout-shared';

export interface LoadedRollout {
  tenantId: string;
  state: RolloutState;
  rowVersion: number;
  currentBatch: number;
  strategy: RolloutRow['strategy'];
  reason: string | null;
  counts: RolloutCounts;
  /** One line naming the rollout (its Temporal summary), for the workflow's current details. */
  summary: string;
  /** Not before then (ms) is the first batch pushed; null: at once (absent from results recorded before it). */
  startAt?: number | null;
  /** When it reached a final state (ms); null before (absent from results recorded before it). */
  finishedAt?: number | null;
}

export type TransitionResult =
  | { ok: true; state: RolloutState; rowVersion: number; counts?: RolloutCounts }
  | { ok: false; why: 'precondition' | 'state' | 'missing'; state?: RolloutState; rowVersion?: number };

/** Settles the agents a rollout that just ended never pushed to (`skipped`, with why), each with its event. */
async function skipNeverPushed(trx: Knex.Transaction, rollout: RolloutRow) {
  const reason = NEVER_PUSHED[rollout.state];
  if (!reason) return;
  const skipped = await skipPendingAgents(trx, rollout.id, reason);
  await recordResults(
    trx,
    rollout,
    skipped.map((id) => ({ agent_id: id, state: 'skipped' as const, error: reason })),
  );
}

/**
 * A rollout that fails, is aborted or starts rolling back stops delivering to its deferred
 * agents (offline since their push): each is `skipped`, with its previous configuration
 * desired again, and its event. (A completed one keeps delivering for its late-arrival window.)
 */
async function withdrawFromDeferred(trx: Knex.Transaction, rollout: RolloutRow) {
  const state = rollout.state;
  if (state !== 'failed' && state !== 'aborted' && state !== 'rolling-back') return;
  const rollback = state === 'rolling-back' ? ROLLBACK_OF_DEFERRED : undefined;
  const withdrawn = await withdrawDeferred(trx, rollout.id, rollout.content_hash, NEVER_CAME_ONLINE[state], rollback);
  await recordDeferredResults(trx, rollout, withdrawn);
}

/** An abort gives up on the agents of the batch in flight that have not reported. */
async function giveUpApplying(trx: Knex.Transaction, rollout: RolloutRow) {
  if (rollout.state !== 'aborted' || rollout.current_batch === 0) return;
  const error = ABANDONED_BY_ABORT;
  const abandoned = await failApplying(trx, rollout.id, rollout.current_batch, error);
  await recordResults(
    trx,
    rollout,
    abandoned.map((id) => ({ agent_id: id, state: 'failed' as const, error })),
    { batch: rollout.current_batch },
    'abandoned',
  );
}

/** `loadRollout` and `transitionRollout`: reading a rollout's state and changing it. */
export function createRolloutStateActivities(db: Knex) {
  return {
    /**
     * The rollout as the workflow needs it. The api starts the workflow once the row is
     * committed; missing is a retryable failure all the same (a replica of the database
     * that lags behind).
     */
    async loadRollout(rolloutId: string): Promise<LoadedRollout> {
      const row = await findRolloutById(db, rolloutId);
      if (!row)
        throw ApplicationFailure.retryable(`rollout ${rolloutId} is not in the database (yet)`, 'rollout-missing');
      const configuration = await findConfiguration(db, row.tenant_id, row.configuration_id);
      return {
        tenantId: row.tenant_id,
        state: row.state,
        rowVersion: Number(row.row_version),
        currentBatch: row.current_batch,
        strategy: row.strategy,
        reason: row.reason,
        counts: await countsOf(db, rolloutId),
        summary: describeRollout(row, configuration?.name ?? row.configuration_id).summary,
        startAt: row.start_at?.getTime() ?? null,
        finishedAt: row.finished_at?.getTime() ?? null,
      };
    },

    /** `rollout.waiting-for-window`: the next batch waits until one of the strategy's windows opens. */
    async announceWindowWait(input: { rolloutId: string; batch: number; opensAt: number }): Promise<void> {
      const row = await findRolloutById(db, input.rolloutId);
      if (!row) return;
      await emitEvents(db, [
        {
          tenantId: row.tenant_id,
          type: 'rollout.waiting-for-window',
          source: source(row.id),
          subject: row.id,
          data: {
            rolloutId: row.id,
            name: row.name,
            batch: input.batch,
            opensAt: new Date(input.opensAt).toISOString(),
          },
        },
      ]);
    },

    /**
     * The one writer of a rollout's state: a conditional UPDATE (state, and If-Match
     * versions when an operator asked) and its `rollout.*` event, in one transaction. A
     * final state settles the agents never pushed to as `skipped`, all but completed the
     * deferred ones too, and an abort the batch in flight's silent agents (`failed`), each
     * with its event before the state's, which is the rollout's last. Answers the counts after.
     */
    async transitionRollout(change: {
      rolloutId: string;
      from: RolloutState[];
      to: RolloutState;
      versions?: number[];
      reason?: string | null;
      actor?: string;
    }): Promise<TransitionResult> {
      const result: TransitionResult = await db.transaction(async (trx) => {
        const before = await lockRollout(trx, change.rolloutId);
        if (!before) return { ok: false as const, why: 'missing' as const };
        // A retry after the first attempt committed finds the rollout where it was sent.
        if (before.state === change.to && !change.from.includes(before.state)) {
          return { ok: true as const, state: before.state, rowVersion: Number(before.row_version) };
        }
        const row = await setRolloutState(trx, {
          id: change.rolloutId,
          from: change.from,
          to: change.to,
          versions: change.versions,
          reason: change.reason,
        });
        if (!row) {
          const why = change.from.includes(before.state) ? 'precondition' : 'state';
          return { ok: false as const, why, state: before.state, rowVersion: Number(before.row_version) };
        }
        // The agents this state settles first: the state's event is the last of the rollout's.
        await skipNeverPushed(trx, row);
        await withdrawFromDeferred(trx, row);
        await giveUpApplying(trx, row);
        // A resume is announced as such, also one that leads back to `scheduled`.
        const resumed = before.state === 'paused' && (change.to === 'running' || change.to === 'scheduled');
        const type = resumed ? 'rollout.resumed' : ROLLOUT_STATE_EVENTS[change.to];
        await emitEvents(trx, [
          {
            tenantId: row.tenant_id,
            type,
            source: source(row.id),
            subject: row.id,
            data: {
              rolloutId: row.id,
              name: row.name,
              description: row.description,
              from: before.state,
              state: row.state,
              reason: row.reason,
              actor: change.actor ?? 'workflow',
              ...(row.state === 'scheduled' ? { startAt: row.start_at?.toISOString() } : {}),
            },
          },
        ]);
        return { ok: true as const, state: row.state, rowVersion: Number(row.row_version) };
      });
      return result.ok ? { ...result, counts: await countsOf(db, change.rolloutId) } : result;
    },
  };
}
