/**
 * Settling a pushed batch: the agents' reports (or their silence past the apply timeout),
 * the batch's outcome and its `rollout.progress` event, or giving up on the batch when the
 * rollout was aborted.
 */
import { heartbeat, sleep } from '@temporalio/activity';
import type { Knex } from 'knex';
import { emitEvents } from '../db/repos/events';
import {
  batchOutcome,
  batchWaiting,
  countDeferred,
  failApplying,
  failSucceeded,
  healthGateCandidates,
  settleBatch,
  settleDeferred,
  withdrawDeferred,
} from '../db/repos/rollout-agents';
import { lockRolloutState, type RolloutRow } from '../db/repos/rollouts';
import {
  healthVerdict,
  LATE_WATCH_MAX_MS,
  NEVER_CAME_ONLINE,
  offlineRules,
  type ComponentHealthJson,
} from '../domain/rollouts';
import type { BatchOutcome, RolloutCounts } from '../workflows/definitions';
import { whileHeartbeating } from './keep-alive';
import { countsOf, loadRolloutRow, POLL_MS, recordDeferredResults, recordResults, source } from './rollout-shared';

/** How often a finished rollout looks for its late arrivals (agents come online over days, not seconds). */
export const LATE_POLL_MS = 5_000;

/** How often a baking batch's health is looked at (health is reported as it changes, seconds apart at best). */
export const HEALTH_POLL_MS = 1_000;

/** The batch's outcome as the workflow judges it. */
async function judgedOutcome(db: Knex, rolloutId: string, batch: number): Promise<BatchOutcome> {
  const outcome = await batchOutcome(db, rolloutId, batch);
  return {
    batch,
    pushed: outcome.succeeded + outcome.failed,
    succeeded: outcome.succeeded,
    failed: outcome.failed,
    skipped: outcome.skipped,
    deferred: outcome.deferred,
  };
}

/** Settles the deferred agents that reported since (or that another push reached), with their events. */
async function settleLateArrivals(trx: Knex.Transaction, rollout: RolloutRow): Promise<void> {
  const settled = await settleDeferred(trx, rollout.id, rollout.content_hash);
  await recordDeferredResults(trx, rollout, settled);
}

/** Closes the late-arrival window: the deferred agents still offline are skipped, each recorded. */
async function closeLateWindow(trx: Knex.Transaction, rollout: RolloutRow): Promise<void> {
  const expired = await withdrawDeferred(trx, rollout.id, rollout.content_hash, NEVER_CAME_ONLINE.late);
  await recordDeferredResults(trx, rollout, expired);
}

/** `abandonBatch` and `awaitBatch`: how a pushed batch ends. */
export function createRolloutSettlingActivities(db: Knex) {
  return {
    /**
     * Gives up on the batch's agents still applying once the rollout was aborted while
     * waiting. The abort's own transition does so already (`transitionRollout`, so its event
     * is the rollout's last), so this normally finds none; the workflow still calls it, and
     * its histories record the call.
     */
    async abandonBatch(input: { rolloutId: string; batch: number; reason: string }): Promise<number> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      return db.transaction(async (trx) => {
        const abandoned = await failApplying(trx, rollout.id, input.batch, input.reason);
        await recordResults(
          trx,
          rollout,
          abandoned.map((id) => ({ agent_id: id, state: 'failed' as const, error: input.reason })),
          { batch: input.batch },
          'abandoned',
        );
        return abandoned.length;
      });
    },

    /**
     * Waits for the batch's agents to report APPLIED or FAILED on the rollout's hash, up to
     * `applyTimeoutSeconds` from the push (a restarted worker keeps the same deadline);
     * agents still silent then fail. One `rollout.agent-updated` per agent, one
     * `rollout.progress` per batch.
     */
    async awaitBatch(input: {
      rolloutId: string;
      batch: number;
    }): Promise<BatchOutcome & { awaited: number; counts: RolloutCounts }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      const timeoutMs = rollout.strategy.applyTimeoutSeconds * 1000;
      const awaited = (await batchWaiting(db, rollout.id, input.batch)).applying;
      // Only a rollout that defers offline agents has any to look for at each poll.
      const defers = offlineRules(rollout.strategy).mode === 'defer';
      for (;;) {
        await whileHeartbeating(() =>
          db.transaction(async (trx) => {
            const settled = await settleBatch(trx, rollout.id, input.batch, rollout.content_hash);
            await recordResults(trx, rollout, settled, { batch: input.batch });
            // Agents of earlier batches that were offline settle as they come back.
            if (!defers) return;
            const late = await settleDeferred(trx, rollout.id, rollout.content_hash);
            await recordDeferredResults(trx, rollout, late);
          }),
        );
        const waiting = await batchWaiting(db, rollout.id, input.batch);
        if (waiting.applying === 0) break;
        if (waiting.pushedAt && Date.now() - waiting.pushedAt.getTime() >= timeoutMs) {
          const error = `no APPLIED or FAILED report within ${rollout.strategy.applyTimeoutSeconds} s`;
          await db.transaction(async (trx) => {
            const timedOut = await failApplying(trx, rollout.id, input.batch, error);
            await recordResults(
              trx,
              rollout,
              timedOut.map((id) => ({ agent_id: id, state: 'failed' as const, error })),
              { batch: input.batch },
              'timed-out',
            );
          });
          break;
        }
        heartbeat(waiting.applying);
        await sleep(POLL_MS); // a cancelled activity (abort, rollback) ends here: heartbeats deliver the cancellation
      }
      const outcome = await judgedOutcome(db, rollout.id, input.batch);
      const counts = await countsOf(db, rollout.id);
      await db.transaction(async (trx) => {
        // An abort or rollback that settled the batch meanwhile had the last word: its event stays the last.
        const state = await lockRolloutState(trx, rollout.id);
        if (state !== 'running' && state !== 'paused') return;
        await emitEvents(trx, [
          {
            tenantId: rollout.tenant_id,
            type: 'rollout.progress',
            source: source(rollout.id),
            subject: rollout.id,
            data: { rolloutId: rollout.id, name: rollout.name, batch: input.batch, progress: counts.progress },
          },
        ]);
      });
      return { ...outcome, awaited, counts };
    },

    /**
     * The health gate during a batch's bake (strategy `healthGate`): watches the batch's
     * agents that applied the version until `until` (epoch ms), and fails those that stay
     * unhealthy or whose connection keeps dropping, each with its `rollout.agent-updated`.
     * Answers as soon as it failed any (`failedNow`), so the workflow judges the batch again,
     * or at `until` with none. A pause, abort or rollback cancels it.
     */
    async watchBatchHealth(input: {
      rolloutId: string;
      batch: number;
      until: number;
    }): Promise<{ failedNow: number; outcome: BatchOutcome; counts: RolloutCounts }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      const gate = rollout.strategy.healthGate;
      for (;;) {
        const failed = gate
          ? await whileHeartbeating(() =>
              db.transaction(async (trx) => {
                const candidates = await healthGateCandidates(trx, rollout.id, input.batch, gate);
                const verdicts = candidates.map((agent) => ({
                  agentId: agent.agent_id,
                  error: healthVerdict(
                    agent.unhealthy_seconds !== null && agent.unhealthy_seconds >= gate.unhealthyAfterSeconds
                      ? { unhealthyForSeconds: agent.unhealthy_seconds }
                      : { disconnects: agent.disconnects },
                    agent.health as ComponentHealthJson | null,
                  ),
                }));
                const failed = await failSucceeded(trx, rollout.id, verdicts);
                await recordResults(trx, rollout, failed, { batch: input.batch, healthGate: true }, 'unhealthy');
                return failed.length;
              }),
            )
          : 0;
        if (failed > 0 || Date.now() >= input.until) {
          const outcome = await judgedOutcome(db, rollout.id, input.batch);
          return { failedNow: failed, outcome, counts: await countsOf(db, rollout.id) };
        }
        heartbeat();
        await sleep(Math.min(HEALTH_POLL_MS, input.until - Date.now())); // a pause, abort or rollback cancels it here
      }
    },

    /**
     * A completed (or paused) rollout's late arrivals: its deferred agents settle as they
     * connect and report, until none is left or, once completed, the strategy's
     * `lateArrivalSeconds` from the end have passed; then the rest are skipped and no longer
     * get the version. Runs at most LATE_WATCH_MAX_MS a call: `done` says whether the window
     * closed (or nobody is left).
     */
    async awaitLateArrivals(input: {
      rolloutId: string;
      /** Watch until then (ms) and no longer: the workflow holds the window and closes it (`expireLateArrivals`). */
      until?: number;
    }): Promise<{ done: boolean; deferred: number; counts: RolloutCounts }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      // Runs recorded before the workflow held the window left its end to this activity's clock.
      const windowEnds =
        input.until === undefined && rollout.finished_at
          ? rollout.finished_at.getTime() + offlineRules(rollout.strategy).lateArrivalSeconds * 1000
          : Infinity;
      const callEnds = input.until ?? Date.now() + LATE_WATCH_MAX_MS;
      for (;;) {
        await whileHeartbeating(() => db.transaction((trx) => settleLateArrivals(trx, rollout)));
        const deferred = await countDeferred(db, rollout.id);
        if (deferred === 0) return { done: true, deferred, counts: await countsOf(db, rollout.id) };
        // Only a finished rollout's window closes (a paused one waits for its agents as long as it is paused).
        if (Date.now() >= windowEnds) {
          await db.transaction((trx) => closeLateWindow(trx, rollout));
          return { done: true, deferred: 0, counts: await countsOf(db, rollout.id) };
        }
        if (Date.now() >= callEnds) return { done: false, deferred, counts: await countsOf(db, rollout.id) };
        heartbeat(deferred);
        await sleep(Math.max(1, Math.min(LATE_POLL_MS, windowEnds - Date.now(), callEnds - Date.now()))); // a rollback cancels it here
      }
    },

    /**
     * Closes a completed rollout's late-arrival window: its deferred agents still offline are
     * skipped ("offline for the whole rollout…") and their previous configuration is desired
     * again, each with its event and history entry.
     */
    async expireLateArrivals(input: { rolloutId: string }): Promise<{ counts: RolloutCounts }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      await db.transaction(async (trx) => {
        await settleLateArrivals(trx, rollout); // those that reported at the last moment are not skipped
        await closeLateWindow(trx, rollout);
      });
      return { counts: await countsOf(db, rollout.id) };
    },
  };
}
