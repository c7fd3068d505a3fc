/**
 * A rollout's rollback: every touched agent gets back the configuration version it had
 * before, and the rollback waits for their reports.
 */
import { heartbeat, sleep } from '@temporalio/activity';
import type { Knex } from 'knex';
import { lockAgentRows } from '../db/repos/agents';
import {
  claimRollback,
  countRollbackWaiting,
  failRollbackAgents,
  rollbackWaiting,
  settleRollback,
} from '../db/repos/rollout-agents';
import { pushConfiguration, PushError } from '../domain/pushes';
import { whileHeartbeating } from './keep-alive';
import type { PreviousVersion } from '../db/repos/agent-history';
import type { RolloutRow } from '../db/repos/rollouts';
import { loadRolloutRow, POLL_MS, recordPushes, recordResults } from './rollout-shared';

/** The rollback fails for these agents (unreachable, or silent past the timeout), recorded in their history. */
async function failRollback(
  trx: Knex.Transaction,
  rollout: RolloutRow,
  agentIds: string[],
  error: string,
  version?: PreviousVersion,
) {
  await failRollbackAgents(trx, rollout.id, agentIds, error);
  await recordPushes(trx, rollout, agentIds, { kind: 'rollback-failed', detail: error, version });
}

/** `startRollback` and `awaitRollback`: the pushes back, then the wait for their reports. */
export function createRolloutRollbackActivities(db: Knex) {
  return {
    /** Pushes to every touched agent the configuration version it had before. */
    async startRollback(input: { rolloutId: string }): Promise<{ pushed: number }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
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
            const version = { configurationId: group.configurationId, version: group.version, hash: null };
            try {
              const result = await pushConfiguration(
                trx,
                {
                  tenantId: rollout.tenant_id,
                  agentIds: group.agentIds,
                  configurationId: group.configurationId,
                  version: group.version,
                },
                { rowsLocked: true },
              );
              pushed += result.agentIds.length;
              const pushedVersion = { ...version, hash: result.hash };
              await recordPushes(trx, rollout, result.agentIds, { kind: 'rollback-pushed', version: pushedVersion });
              const reached = new Set(result.agentIds);
              const unreachable = group.agentIds.filter((id) => !reached.has(id));
              const why = 'the agent can no longer receive configurations';
              await failRollback(trx, rollout, unreachable, why, pushedVersion);
            } catch (error) {
              if (!(error instanceof PushError)) throw error;
              await failRollback(trx, rollout, group.agentIds, error.message, version);
            }
          }
          return { pushed };
        }),
      );
    },

    /** Waits for the rollback's reports, like awaitBatch (timeout from the rollback's start). */
    async awaitRollback(input: { rolloutId: string }): Promise<{ waitingAfterTimeout: number }> {
      const rollout = await loadRolloutRow(db, input.rolloutId);
      const started = Date.now();
      const timeoutMs = rollout.strategy.applyTimeoutSeconds * 1000;
      for (;;) {
        await whileHeartbeating(() =>
          db.transaction(async (trx) => {
            const settled = await settleRollback(trx, rollout.id);
            await recordResults(trx, rollout, settled, { rollback: true });
          }),
        );
        const waiting = await countRollbackWaiting(db, rollout.id);
        if (waiting === 0) return { waitingAfterTimeout: 0 };
        if (Date.now() - started >= timeoutMs) {
          const error = `no report within ${rollout.strategy.applyTimeoutSeconds} s`;
          const silent = await db.transaction(async (trx) => {
            const agentIds = await rollbackWaiting(trx, rollout.id);
            await failRollback(trx, rollout, agentIds, error);
            return agentIds.length;
          });
          return { waitingAfterTimeout: silent };
        }
        heartbeat(waiting);
        await sleep(POLL_MS);
      }
    },
  };
}
