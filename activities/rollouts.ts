/**
 * The rollout workflow's hands: every database read and write, every push. Each activity
 * is idempotent (a retry after a worker crash finds the batch assigned, the agents claimed,
 * the results settled), so a rollout resumes with no agent pushed twice and none skipped.
 */
import { heartbeat, sleep } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { pushConfiguration, PushError } from '../domain/pushes';
import { evaluatePolicies, violationsOf } from '../domain/policies/evaluate';
import { lockAgentRows } from '../db/repos/agents';
import { findConfiguration } from '../db/repos/configurations';
import { emitEvents, type NewEvent } from '../db/repos/events';
import {
  addTargetAgents,
  assignBatch,
  batchOutcome,
  batchWaiting,
  claimBatchForPush,
  claimRollback,
  countRolloutAgents,
  failApplying,
  failRollbackAgents,
  finishAgents,
  rollbackWaiting,
  rolloutProgress,
  settleBatch,
  settleRollback,
  skipPendingAgents,
  type SettledAgent,
} from '../db/repos/rollout-agents';
import {
  findRolloutById,
  lockRollout,
  lockRolloutState,
  setCurrentBatch,
  setRolloutState,
  type RolloutRow,
} from '../db/repos/rollouts';
import { NEVER_PUSHED, ROLLOUT_STATE_EVENTS, type RolloutState } from '../domain/rollouts';
import type { BatchOutcome, RolloutCounts } from '../workflows/definitions';
import { describeRollout } from '../workflows/rollout-start';
import { whileHeartbeating } from './keep-alive';

/** How often a waiting activity looks for agents' reports (and heartbeats). */
const POLL_MS = 250;

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
}

export type TransitionResult =
  | { ok: true; state: RolloutState; rowVersion: number; counts?: RolloutCounts }
  | { ok: false; why: 'precondition' | 'state' | 'missing'; state?: RolloutState; rowVersion?: number };

const source = (id: string) => `/api/rollouts/${id}`;

export function createRolloutActivities(db: Knex) {
  async function load(rolloutId: string): Promise<RolloutRow> {
    const row = await findRolloutById(db, rolloutId);
    if (!row) throw new Error(`rollout ${rolloutId} does not exist`);
    return row;
  }

  type AgentResult = { agent_id: string; state: SettledAgent['state'] | 'skipped'; error: string | null };

  function agentEvents(rollout: RolloutRow, settled: AgentResult[], extra: Record<string, unknown> = {}): NewEvent[] {
    return settled.map((agent) => ({
      tenantId: rollout.tenant_id,
      type: 'rollout.agent-updated',
      source: source(rollout.id),
      subject: agent.agent_id,
      data: { rolloutId: rollout.id, agentId: agent.agent_id, state: agent.state, error: agent.error, ...extra },
    }));
  }

  async function countsOf(rolloutId: string): Promise<RolloutCounts> {
    const { progress, rollback } = await rolloutProgress(db, rolloutId);
    return { progress, rollback };
  }

  /** Settles the agents a rollout that just ended never pushed to (`skipped`, with why), each with its event. */
  async function skipNeverPushed(trx: Knex.Transaction, rollout: RolloutRow) {
    const reason = NEVER_PUSHED[rollout.state];
    if (!reason) return;
    const skipped = await skipPendingAgents(trx, rollout.id, reason);
    await emitEvents(
      trx,
      agentEvents(
        rollout,
        skipped.map((id) => ({ agent_id: id, state: 'skipped' as const, error: reason })),
      ),
    );
  }

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
        counts: await countsOf(rolloutId),
        summary: describeRollout(row, configuration?.name ?? row.configuration_id).summary,
      };
    },

    /**
     * The one writer of a rollout's state: a conditional UPDATE (state, and If-Match
     * versions when an operator asked) and its `rollout.*` event, in one transaction. A
     * final state settles the agents never pushed to as `skipped`. Answers the counts after.
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
        const type =
          change.to === 'running' && before.state === 'paused' ? 'rollout.resumed' : ROLLOUT_STATE_EVENTS[change.to];
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
            },
          },
        ]);
        await skipNeverPushed(trx, row);
        return { ok: true as const, state: row.state, rowVersion: Number(row.row_version) };
      });
      return result.ok ? { ...result, counts: await countsOf(change.rolloutId) } : result;
    },

    /**
     * Batch `batch`: first the agents that joined the target since (a later batch includes
     * them), then the next agents by id, `batchSize` or `batchPercent` of the current total;
     * then the policies judge the batch again (with the rollout's batch facts), and denied
     * agents fail with the policy's name. Nothing happens unless the rollout is running: the
     * row is locked against transitions meanwhile, so an abort cannot leave joined agents
     * behind in an aborted rollout.
     */
    async prepareBatch(input: {
      rolloutId: string;
      batch: number;
    }): Promise<{ running: boolean; agents: number; denied: number }> {
      const rollout = await load(input.rolloutId);
      const prepared = await db.transaction(async (trx) => {
        if ((await lockRolloutState(trx, rollout.id)) !== 'running') return undefined;
        await addTargetAgents(trx, rollout, { joining: true });
        const total = await countRolloutAgents(trx, rollout.id);
        const { batchSize, batchPercent } = rollout.strategy;
        const size = batchSize ?? Math.max(1, Math.ceil((total * (batchPercent ?? 100)) / 100));
        const agentIds = await assignBatch(trx, rollout.id, input.batch, size);
        // An empty batch means the rollout is done; it is not a batch (currentBatch stays).
        if (agentIds.length > 0) await setCurrentBatch(trx, rollout.id, input.batch);
        return { total, agentIds };
      });
      if (!prepared) return { running: false, agents: 0, denied: 0 };
      const { total, agentIds } = prepared;
      if (agentIds.length === 0) return { running: true, agents: 0, denied: 0 };
      const evaluation = await evaluatePolicies(db, rollout.tenant_id, {
        configurationId: rollout.configuration_id,
        version: rollout.version,
        target: { agentIds },
        rollout: { batchSize: rollout.strategy.batchSize, batchPercent: rollout.strategy.batchPercent },
        totalTargetCount: total,
      });
      // Agents denied for the same reason fail in one statement.
      const byReason = new Map<string, Set<string>>();
      for (const violation of violationsOf(evaluation)) {
        const error = `policy '${violation.name}' denied the push${violation.error ? `: ${violation.error}` : ''}`;
        if ([...byReason.values()].some((ids) => ids.has(violation.agentId))) continue;
        if (!byReason.has(error)) byReason.set(error, new Set());
        byReason.get(error)!.add(violation.agentId);
      }
      let denied = 0;
      await db.transaction(async (trx) => {
        for (const [error, ids] of byReason) {
          const done = await finishAgents(trx, rollout.id, [...ids], 'failed', error);
          denied += done.length;
          await emitEvents(
            trx,
            agentEvents(
              rollout,
              done.map((id) => ({ agent_id: id, state: 'failed' as const, error })),
              { batch: input.batch },
            ),
          );
        }
      });
      return { running: true, agents: agentIds.length, denied };
    },

    /**
     * Pushes the batch's pending agents (claimed and pushed in one transaction), unless the
     * rollout is no longer running (then nothing).
     */
    async pushBatch(input: { rolloutId: string; batch: number }): Promise<{ pushed: number; skipped: number }> {
      const rollout = await load(input.rolloutId);
      return whileHeartbeating(() =>
        db.transaction(async (trx) => {
          if ((await lockRolloutState(trx, rollout.id)) !== 'running') return { pushed: 0, skipped: 0 };
          const { push, skipped } = await claimBatchForPush(trx, rollout.id, input.batch);
          const unreachable = 'the agent can no longer receive configurations';
          await emitEvents(
            trx,
            agentEvents(
              rollout,
              skipped.map((id) => ({ agent_id: id, state: 'skipped' as const, error: unreachable })),
              { batch: input.batch },
            ),
          );
          if (push.length > 0) {
            // A PushError (the version is gone or unpublished) fails the activity for good.
            await pushConfiguration(trx, {
              tenantId: rollout.tenant_id,
              agentIds: push,
              configurationId: rollout.configuration_id,
              version: rollout.version,
            });
          }
          return { pushed: push.length, skipped: skipped.length };
        }),
      );
    },

    /** Gives up on the batch's agents still applying (the rollout was aborted while waiting). */
    async abandonBatch(input: { rolloutId: string; batch: number; reason: string }): Promise<number> {
      const rollout = await load(input.rolloutId);
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
      const rollout = await load(input.rolloutId);
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
      const counts = await countsOf(rollout.id);
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

    /** Pushes to every touched agent the configuration version it had before. */
    async startRollback(input: { rolloutId: string }): Promise<{ pushed: number }> {
      const rollout = await load(input.rolloutId);
      return whileHeartbeating(() =>
        db.transaction(async (trx) => {
          let pushed = 0;
          const groups = await claimRollback(trx, rollout.id, rollout.content_hash);
          await lockAgentRows(
            trx,
            rollout.tenant_id,
            groups.flatMap((group) => group.agentIds),
          );
          for (const group of groups) {
            try {
              const result = await pushConfiguration(trx, {
                tenantId: rollout.tenant_id,
                agentIds: group.agentIds,
                configurationId: group.configurationId,
                version: group.version,
              });
              pushed += result.agentIds.length;
              const reached = new Set(result.agentIds);
              const unreachable = group.agentIds.filter((id) => !reached.has(id));
              await failRollbackAgents(trx, rollout.id, unreachable, 'the agent can no longer receive configurations');
            } catch (error) {
              if (!(error instanceof PushError)) throw error;
              await failRollbackAgents(trx, rollout.id, group.agentIds, error.message);
            }
          }
          return { pushed };
        }),
      );
    },

    /** Waits for the rollback's reports, like awaitBatch (timeout from the rollback's start). */
    async awaitRollback(input: { rolloutId: string }): Promise<{ waitingAfterTimeout: number }> {
      const rollout = await load(input.rolloutId);
      const started = Date.now();
      const timeoutMs = rollout.strategy.applyTimeoutSeconds * 1000;
      for (;;) {
        await whileHeartbeating(() =>
          db.transaction(async (trx) => {
            const settled = await settleRollback(trx, rollout.id);
            await emitEvents(trx, agentEvents(rollout, settled, { rollback: true }));
          }),
        );
        const waiting = await rollbackWaiting(db, rollout.id);
        if (waiting.length === 0) return { waitingAfterTimeout: 0 };
        if (Date.now() - started >= timeoutMs) {
          await failRollbackAgents(
            db,
            rollout.id,
            waiting,
            `no report within ${rollout.strategy.applyTimeoutSeconds} s`,
          );
          return { waitingAfterTimeout: waiting.length };
        }
        heartbeat(waiting.length);
        await sleep(POLL_MS);
      }
    },
  };
}
