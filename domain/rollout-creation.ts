/**
 * A rollout created by the service itself rather than by an operator's POST /api/rollouts:
 * a Git source's rollout template, and a federated rollout's part on an installation (this
 * one, or a peer's through its incoming endpoint). The same checks as the rollouts API: the
 * target exists, an agent is in at most one active rollout, and the enforced policies
 * judge every target agent with the rollout's batch facts.
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db/errors';
import { emitEvents } from '../db/repos/events';
import { activeRolloutInTarget, addTargetAgents } from '../db/repos/rollout-agents';
import { insertRollout, type RolloutRow, type RolloutStrategy, type RolloutTarget } from '../db/repos/rollouts';
import { DomainError } from './errors';
import { assertPolicies, checkTarget, type Evaluation } from './policies/evaluate';

/** A target agent is already in another active rollout (the rollouts API's 409). */
export class TargetBusyError extends DomainError {
  override readonly name = 'TargetBusyError';
}

export interface RolloutRequest {
  tenantId: string;
  name: string | null;
  description: string | null;
  configurationId: string;
  version: number;
  contentHash: string;
  target: RolloutTarget;
  strategy: RolloutStrategy;
  createdBy: string;
  /** The key a federation peer asked under (rollouts.federation_key). */
  federationKey?: string;
}

/** The API's strategy defaults, for a strategy stored without them (a Git rollout template). */
export const STRATEGY_DEFAULTS = {
  bakeSeconds: 0,
  applyTimeoutSeconds: 300,
  maxFailurePercent: 0,
  onFailure: 'pause',
} as const;

/**
 * Creates the rollout, pending, with its target agents, judged by the enforced policies, and
 * announces it (`rollout.created`). In the caller's transaction, so a refusal leaves nothing:
 * NotFoundError (target), TargetBusyError, PolicyDeniedError.
 */
export async function createCheckedRollout(trx: Knex.Transaction, request: RolloutRequest): Promise<RolloutRow> {
  await checkTarget(trx, request.tenantId, request.target);
  const row = await insertRollout(trx, {
    tenant_id: request.tenantId,
    name: request.name,
    description: request.description,
    configuration_id: request.configurationId,
    version: request.version,
    content_hash: request.contentHash,
    target: request.target,
    strategy: request.strategy,
    created_by: request.createdBy,
    federation_key: request.federationKey ?? null,
  });
  await addAgentsOnce(trx, row);
  await judgeRollout(trx, row);
  await emitEvents(trx, [
    {
      tenantId: row.tenant_id,
      type: 'rollout.created',
      source: `/api/rollouts/${row.id}`,
      subject: row.id,
      data: {
        id: row.id,
        name: row.name,
        configurationId: row.configuration_id,
        version: row.version,
        target: row.target,
        strategy: row.strategy,
        state: row.state,
        createdBy: row.created_by,
      },
    },
  ]);
  return row;
}

/** The enforced policies over the rollout's agents, as its start judges them; PolicyDeniedError when any is denied. */
export function judgeRollout(db: Knex | Knex.Transaction, row: RolloutRow): Promise<Evaluation> {
  return assertPolicies(db, row.tenant_id, {
    configurationId: row.configuration_id,
    version: row.version,
    target: { rolloutId: row.id },
    rollout: { batchSize: row.strategy.batchSize, batchPercent: row.strategy.batchPercent },
  });
}

async function addAgentsOnce(trx: Knex.Transaction, row: RolloutRow): Promise<void> {
  try {
    // A savepoint, so a conflict leaves the transaction usable to name the rollout in the way.
    await trx.transaction((savepoint) => addTargetAgents(savepoint, row, { joining: false }));
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    const other = await activeRolloutInTarget(trx, row);
    throw new TargetBusyError(
      other
        ? `Agent ${other.agentId} is already in active rollout ${other.rolloutId}; an agent is in at most one active rollout.`
        : 'A target agent is already in another active rollout; an agent is in at most one active rollout.',
    );
  }
}
