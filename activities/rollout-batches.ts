/**
 * Choosing a rollout's next batch (its agents, judged again by the policies) and pushing
 * the configuration to it.
 */
import type { Knex } from 'knex';
import {
  addTargetAgents,
  assignBatch,
  claimBatchForPush,
  countRolloutAgents,
  finishAgents,
  OFFLINE_SKIPPED,
} from '../db/repos/rollout-agents';
import { lockRolloutState, setCurrentBatch } from '../db/repos/rollouts';
import { evaluatePolicies, violationsOf } from '../domain/policies/evaluate';
import { offlineRules } from '../domain/rollouts';
import { pushConfiguration } from '../domain/pushes';
import { whileHeartbeating } from './keep-alive';
import { loadRolloutRow, recordPushes, recordResults } from './rollout-shared';

/** `prepareBatch` and `pushBatch`: a batch's agents, then the push to them. */
export function createRolloutBatchActivities(db: Knex) {
  return {
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
      const rollout = await loadRolloutRow(db, input.rolloutId);
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
          await recordResults(
            trx,
            rollout,
            done.map((id) => ({ agent_id: id, state: 'failed' as const, error })),
            { batch: input.batch },
            'denied',
          );
        }
      });
      return { running: true, agents: agentIds.length, denied };
    },

    /**
     * Pushes the batch's pending agents (claimed and pushed in one transaction), unless the
     * rollout is no longer running (then nothing). Offline agents are pushed and deferred,
     * skipped, or waited for like the others, as the strategy's `offlineAgents` says.
     */
    async pushBatch(input: {
      rolloutId: string;
      batch: number;
    }): Promise<{ pushed: number; skipped: number; deferred: number }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      const { mode } = offlineRules(rollout.strategy);
      return whileHeartbeating(() =>
        db.transaction(async (trx) => {
          if ((await lockRolloutState(trx, rollout.id)) !== 'running') return { pushed: 0, skipped: 0, deferred: 0 };
          const claimed = await claimBatchForPush(trx, rollout.id, input.batch, mode);
          const unreachable = 'the agent can no longer receive configurations';
          const results = [
            ...claimed.unreachable.map((id) => ({ agent_id: id, state: 'skipped' as const, error: unreachable })),
            ...claimed.offline.map((id) => ({ agent_id: id, state: 'skipped' as const, error: OFFLINE_SKIPPED })),
            ...claimed.deferred.map((id) => ({ agent_id: id, state: 'deferred' as const, error: null })),
          ];
          await recordResults(trx, rollout, results, { batch: input.batch });
          const agentIds = [...claimed.push, ...claimed.deferred];
          if (agentIds.length > 0) {
            // A PushError (the version is gone or unpublished) fails the activity for good.
            await pushConfiguration(trx, {
              tenantId: rollout.tenant_id,
              agentIds,
              configurationId: rollout.configuration_id,
              version: rollout.version,
            });
            await recordPushes(trx, rollout, claimed.push, { kind: 'pushed', batch: input.batch });
          }
          const skipped = claimed.unreachable.length + claimed.offline.length;
          return { pushed: claimed.push.length, skipped, deferred: claimed.deferred.length };
        }),
      );
    },
  };
}
