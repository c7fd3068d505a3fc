/**
 * Settling a pushed batch: the agents' reports (or their silence past the apply timeout),
 * the batch's outcome and its `rollout.progress` event, or giving up on the batch when the
 * rollout was aborted.
 */
import { heartbeat, sleep } from '@temporalio/activity';
import type { Knex } from 'knex';
import { emitEvents } from '../db/repos/events';
import { batchOutcome, batchWaiting, failApplying, settleBatch } from '../db/repos/rollout-agents';
import type { BatchOutcome, RolloutCounts } from '../workflows/definitions';
import { whileHeartbeating } from './keep-alive';
import { agentEvents, countsOf, loadRolloutRow, POLL_MS, source } from './rollout-shared';

/** `abandonBatch` and `awaitBatch`: how a pushed batch ends. */
export function createRolloutSettlingActivities(db: Knex) {
  return {
    /** Gives up on the batch's agents still applying (the rollout was aborted while waiting). */
    async abandonBatch(input: { rolloutId: string; batch: number; reason: string }): Promise<number> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      return db.transaction(async (trx) => {
        const abandoned = await failApplying(trx, rollout.id, input.batch, input.reason);
        await emitEvents(
          trx,
          agentEvents(
            rollout,
            abandoned.map((id) => ({ agent_id: id, state: 'failed' as const, error: input.reason })),
            { batch: input.batch },
          ),
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
      for (;;) {
        await whileHeartbeating(() =>
          db.transaction(async (trx) => {
            const settled = await settleBatch(trx, rollout.id, input.batch, rollout.content_hash);
            await emitEvents(trx, agentEvents(rollout, settled, { batch: input.batch }));
          }),
        );
        const waiting = await batchWaiting(db, rollout.id, input.batch);
        if (waiting.applying === 0) break;
        if (waiting.pushedAt && Date.now() - waiting.pushedAt.getTime() >= timeoutMs) {
          const error = `no APPLIED or FAILED report within ${rollout.strategy.applyTimeoutSeconds} s`;
          await db.transaction(async (trx) => {
            const timedOut = await failApplying(trx, rollout.id, input.batch, error);
            await emitEvents(
              trx,
              agentEvents(
                rollout,
                timedOut.map((id) => ({ agent_id: id, state: 'failed' as const, error })),
                { batch: input.batch },
              ),
            );
          });
          break;
        }
        heartbeat(waiting.applying);
        await sleep(POLL_MS); // a cancelled activity (abort, rollback) ends here: heartbeats deliver the cancellation
      }
      const outcome = await batchOutcome(db, rollout.id, input.batch);
      const counts = await countsOf(db, rollout.id);
      await emitEvents(db, [
        {
          tenantId: rollout.tenant_id,
          type: 'rollout.progress',
          source: source(rollout.id),
          subject: rollout.id,
          data: { rolloutId: rollout.id, name: rollout.name, batch: input.batch, progress: counts.progress },
        },
      ]);
      return {
        batch: input.batch,
        pushed: outcome.succeeded + outcome.failed,
        succeeded: outcome.succeeded,
        failed: outcome.failed,
        skipped: outcome.skipped,
        awaited,
        counts,
      };
    },
  };
}
