/**
 * The receiver's side of a federated rollout: a peer sends a configuration version (name,
 * format, content) with a target and a strategy; this installation copies the version and
 * creates the rollout, found again by the peer's key so that a retried call creates nothing
 * twice (docs/federation.md).
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../../db/errors';
import { findVersionByHash, type VersionRow } from '../../db/repos/configuration-versions';
import { findConfigurationByName, lockConfiguration, type ConfigurationRow } from '../../db/repos/configurations';
import { countRolloutAgents } from '../../db/repos/rollout-agents';
import { findRolloutByFederationKey, type RolloutRow } from '../../db/repos/rollouts';
import { ConfigurationNameTakenError, createConfiguration } from '../configurations/configurations';
import { contentHash, type Format } from '../configurations/content';
import {
  publishVersion,
  refuseManagedByGit,
  refuseOtherFormat,
  saveVersion,
  type CheckedContent,
} from '../configurations/versions';
import { createRollout } from '../rollout-creation';
import type { RolloutStrategy, RolloutTarget } from '../rollouts';

export interface CopiedConfiguration {
  name: string;
  format: Format;
  /** Checked by the receiver (checkVersionContent) before it copies. */
  content: string;
}

export interface IncomingRollout {
  configuration: CopiedConfiguration;
  target: RolloutTarget;
  strategy: RolloutStrategy;
  name?: string | null;
  description?: string | null;
}

/**
 * The version here with the peer's content: the configuration of the same name (created
 * when missing), and its version with the same content hash (published if it was a draft),
 * or a new published version. A configuration managed by Git here is never written to.
 */
export async function copyVersion(
  trx: Knex.Transaction,
  tenantId: string,
  name: string,
  content: CheckedContent,
  actor: string,
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const found =
    (await findConfigurationByName(trx, tenantId, name)) ?? (await createNamed(trx, tenantId, name, content.format));
  const configuration = (await lockConfiguration(trx, tenantId, found.id))!;
  refuseManagedByGit(configuration);
  refuseOtherFormat(configuration, content.format);
  const same = await findVersionByHash(trx, configuration.id, contentHash(content.text));
  if (same?.state === 'published') return { configuration, version: same };
  const draft = same ?? (await saveVersion(trx, configuration, { content, author: actor })).version;
  return publishVersion(trx, tenantId, configuration.id, draft.version, actor);
}

/** A configuration created for the copy; a concurrent copy that created it first is used instead. */
async function createNamed(trx: Knex.Transaction, tenantId: string, name: string, format: Format) {
  const fields = { tenant_id: tenantId, name, description: '', format, labels: {} };
  return createConfiguration(trx, fields).catch(async (error: unknown) => {
    if (!(error instanceof ConfigurationNameTakenError)) throw error;
    return (await findConfigurationByName(trx, tenantId, name))!;
  });
}

/**
 * Copies the version (its content checked before the transaction) and creates the rollout
 * (pending) under the peer's key, in the caller's transaction.
 */
export async function createIncomingRollout(
  trx: Knex.Transaction,
  tenantId: string,
  key: string | undefined,
  request: IncomingRollout,
  content: CheckedContent,
  actor: string,
): Promise<RolloutRow> {
  const { configuration, version } = await copyVersion(trx, tenantId, request.configuration.name, content, actor);
  const { row } = await createRollout(trx, {
    tenantId,
    name: request.name ?? null,
    description: request.description ?? null,
    configurationId: configuration.id,
    version: version.version,
    target: request.target,
    strategy: request.strategy,
    createdBy: actor,
    federationKey: key,
    judge: true,
  });
  return row;
}

/**
 * The rollout created under `key` in a transaction of its own by `create`, or the one an
 * earlier call created (a concurrent twin that committed first included): `created` says which.
 */
export async function createRolloutOnce(
  db: Knex,
  tenantId: string,
  key: string,
  create: (trx: Knex.Transaction) => Promise<RolloutRow>,
): Promise<{ row: RolloutRow; created: boolean }> {
  const earlier = await findRolloutByFederationKey(db, tenantId, key);
  if (earlier) return { row: earlier, created: false };
  try {
    return { row: await db.transaction(create), created: true };
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    return { row: (await findRolloutByFederationKey(db, tenantId, key))!, created: false };
  }
}

/**
 * What creating the rollout would meet (the target, an agent in another active rollout, the
 * policies), in a transaction that is always rolled back: nothing is kept.
 */
export async function dryRunRollout(
  db: Knex,
  create: (trx: Knex.Transaction) => Promise<RolloutRow>,
): Promise<{ allowed: true; agents: number }> {
  const trx = await db.transaction();
  try {
    const row = await create(trx);
    return { allowed: true, agents: await countRolloutAgents(trx, row.id) };
  } finally {
    await trx.rollback();
  }
}
