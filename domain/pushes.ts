/**
 * Pushing a configuration to agents: the desired configuration is written to the agent
 * rows, and every api replica is told (NOTIFY) so the one holding an agent's WebSocket sends
 * `remote_config` at once. Agents that are not connected, and HTTP agents, get it in the
 * reply to their next message (see `remoteConfigFor`). The agent's answer
 * (`remote_config_status`, matched by `config_hash` = sha256 of the content) lands on the
 * row as `applied_*`; whoever waits reads `configOutcomes` (no NOTIFY per agent: every
 * notifying commit takes a cluster-wide lock, too dear for 10,000 reports a second).
 */
import type { Db } from '../db/connection';
import { notifyEach } from '../db/notify';
import { findApplied, lockAgentRows, setDesiredConfiguration } from '../db/repos/agents';
import { findConfiguration } from '../db/repos/configurations';
import { findVersionWithContent } from '../db/repos/configuration-versions';
import { DomainError } from './errors';

/** Payload: `<agent id>,<agent id>,…` (at most PUSH_IDS_PER_NOTIFY ids, under the 8,000-byte limit). */
export const AGENT_PUSH_CHANNEL = 'fleet_agent_push';
const PUSH_IDS_PER_NOTIFY = 200;

/** Statuses that keep an agent from receiving configurations. */
export const UNREACHABLE_STATUSES = ['pending-approval', 'revoked', 'handed-over'] as const;

export class PushError extends DomainError {
  override readonly name = 'PushError';
  constructor(
    readonly reason: 'no-version' | 'not-published',
    message: string,
  ) {
    super(message);
  }
}

export interface PushResult {
  /** sha256 (hex) of the content: the `config_hash` agents report back. */
  hash: string;
  /** The agents whose desired configuration is now this version (unknown, pending-approval, revoked and handed-over agents are left out). */
  agentIds: string[];
}

/**
 * Sets `version` of `configurationId` as the desired configuration of the tenant's agents
 * and tells every replica. Run it in a transaction: the notifications go out at commit.
 * `rowsLocked`: the caller already holds the agents' rows (lockAgentRows), as a caller
 * pushing several versions at once must, to lock them all in one order.
 */
export async function pushConfiguration(
  db: Db,
  push: { tenantId: string; agentIds: readonly string[]; configurationId: string; version: number },
  options: { rowsLocked?: boolean } = {},
): Promise<PushResult> {
  const configuration = await findConfiguration(db, push.tenantId, push.configurationId);
  const version = configuration && (await findVersionWithContent(db, push.configurationId, push.version));
  if (!version)
    throw new PushError('no-version', `configuration ${push.configurationId} has no version ${push.version}`);
  if (version.state !== 'published')
    throw new PushError(
      'not-published',
      `version ${push.version} of configuration ${push.configurationId} is not published`,
    );
  if (push.agentIds.length === 0) return { hash: version.content_hash, agentIds: [] };
  if (!options.rowsLocked) await lockAgentRows(db, push.tenantId, push.agentIds);
  const agentIds = await setDesiredConfiguration(db, push.tenantId, push.agentIds, UNREACHABLE_STATUSES, {
    configurationId: push.configurationId,
    version: push.version,
    hash: version.content_hash,
  });
  const payloads: string[] = [];
  for (let i = 0; i < agentIds.length; i += PUSH_IDS_PER_NOTIFY)
    payloads.push(agentIds.slice(i, i + PUSH_IDS_PER_NOTIFY).join(','));
  await notifyEach(db, AGENT_PUSH_CHANNEL, payloads);
  return { hash: version.content_hash, agentIds };
}

export type ConfigOutcome =
  | { agentId: string; status: 'APPLIED' }
  | { agentId: string; status: 'FAILED'; error: string | null }
  | { agentId: string; status: 'WAITING' };

/**
 * Where each agent stands with the configuration whose hash is `hash`: APPLIED or FAILED
 * as the agent reported it for that hash, else WAITING (not connected yet, applying, or
 * since pushed something else). For whoever waits on a push (rollouts).
 */
export async function configOutcomes(
  db: Db,
  tenantId: string,
  agentIds: readonly string[],
  hash: string,
): Promise<ConfigOutcome[]> {
  const rows = await findApplied(db, tenantId, agentIds);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return agentIds.map((agentId) => {
    const row = byId.get(agentId);
    if (row?.applied_hash === hash && row.applied_status === 'APPLIED') return { agentId, status: 'APPLIED' };
    if (row?.applied_hash === hash && row.applied_status === 'FAILED')
      return { agentId, status: 'FAILED', error: row.applied_error };
    return { agentId, status: 'WAITING' };
  });
}
