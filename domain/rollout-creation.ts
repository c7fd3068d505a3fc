/**
 * Creating a rollout: one operation for every way one comes to be — an operator's
 * POST /api/rollouts, a Git source's rollout template, a federated rollout's part on an
 * installation (this one, or a peer's through its incoming endpoint). The same rules for
 * all: a published version of one of the tenant's configurations, a target that exists, an
 * agent in at most one active rollout; and one `rollout.created` event, the rollout as the
 * API shows it.
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../db/errors';
import { findConfiguration, type ConfigurationRow } from '../db/repos/configurations';
import { findVersion } from '../db/repos/configuration-versions';
import { emitEvents } from '../db/repos/events';
import { activeRolloutInTarget, addTargetAgents } from '../db/repos/rollout-agents';
import { insertRollout, type RolloutRow } from '../db/repos/rollouts';
import { DomainError, NotFoundError } from './errors';
import { assertPolicies, checkTarget, type Evaluation } from './policies/evaluate';
import { rolloutView, type RolloutView } from './rollout-view';
import { DEFAULT_LATE_ARRIVAL_SECONDS, type RolloutStrategy, type RolloutTarget } from './rollouts';

/** A target agent is already in another active rollout (the rollouts API's 409). */
export class TargetBusyError extends DomainError {
  override readonly name = 'TargetBusyError';
}

/** The version asked for is a draft: only published versions are rolled out (409). */
export class VersionNotPublishedError extends DomainError {
  override readonly name = 'VersionNotPublishedError';
}

export interface RolloutRequest {
  tenantId: string;
  name: string | null;
  description: string | null;
  configurationId: string;
  version: number;
  target: RolloutTarget;
  strategy: RolloutStrategy;
  createdBy: string;
  /** Not before then is the first batch pushed (RFC 3339 from the caller; none: at once). */
  startAt?: Date | null;
  /** The key a federation peer asked under (rollouts.federation_key). */
  federationKey?: string;
  /**
   * Whether the enforced policies judge the target now (PolicyDeniedError). A rollout the
   * service starts at once (Git, federation) is judged here; an operator's is judged when
   * they start it.
   */
  judge: boolean;
}

export interface CreatedRollout {
  row: RolloutRow;
  configuration: ConfigurationRow;
  /** The rollout as the API shows it, as `rollout.created` announced it. */
  view: RolloutView;
}

/** The API's strategy defaults, for a strategy stored without them (a Git rollout template). */
export const STRATEGY_DEFAULTS = {
  bakeSeconds: 0,
  applyTimeoutSeconds: 300,
  maxFailurePercent: 0,
  onFailure: 'pause',
  offlineAgents: 'defer',
  lateArrivalSeconds: DEFAULT_LATE_ARRIVAL_SECONDS,
} as const;

/**
 * Creates the rollout, pending, with its target agents (judged by the enforced policies when
 * asked), and announces it (`rollout.created`). In the caller's transaction, so a refusal
 * leaves nothing: NotFoundError (configuration, version, group, agent),
 * VersionNotPublishedError, TargetBusyError, PolicyDeniedError.
 */
export async function createRollout(trx: Knex.Transaction, request: RolloutRequest): Promise<CreatedRollout> {
  const { tenantId } = request;
  const configuration = await findConfiguration(trx, tenantId, request.configurationId);
  if (!configuration) throw new NotFoundError('configuration', request.configurationId);
  const version = await findVersion(trx, configuration.id, request.version);
  if (!version) throw new NotFoundError('configuration version', `${configuration.id}/${request.version}`);
  if (version.state !== 'published')
    throw new VersionNotPublishedError(
      `Version ${request.version} of configuration '${configuration.name}' is a draft; publish it before rolling it out.`,
    );
  const ids = (list: string[]) => [...new Set(list.map((id) => id.toLowerCase()))];
  const target = { ...request.target, groupIds: ids(request.target.groupIds), agentIds: ids(request.target.agentIds) };
  await checkTarget(trx, tenantId, target);

  const row = await insertRollout(trx, {
    tenant_id: tenantId,
    name: request.name,
    description: request.description,
    configuration_id: configuration.id,
    version: version.version,
    content_hash: version.content_hash,
    target,
    strategy: request.strategy,
    created_by: request.createdBy,
    federation_key: request.federationKey ?? null,
    start_at: request.startAt ?? null,
  });
  await addAgentsOnce(trx, row);
  if (request.judge) await judgeRollout(trx, row);
  const view = await rolloutView(trx, row);
  await emitEvents(trx, [
    {
      tenantId,
      type: 'rollout.created',
      source: `/api/rollouts/${row.id}`,
      subject: row.id,
      rollout: row.id,
      data: { ...view },
    },
  ]);
  return { row, configuration, view };
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
