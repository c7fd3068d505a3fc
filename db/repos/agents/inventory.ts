import type { Knex } from 'knex';
import type { Db } from '../../connection';
import { revokeAgentCertificates } from '../agent-certificates';
import { bumpGroupVersions, likeLiteral, lockGroupsForMove, type GroupRow } from '../groups';

export const AGENT_STATUSES = ['pending-approval', 'enrolling', 'online', 'offline', 'revoked', 'handed-over'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

export const APPLIED_STATUSES = ['APPLYING', 'APPLIED', 'FAILED'] as const;
export type AppliedStatus = (typeof APPLIED_STATUSES)[number];

export interface AgentRow {
  id: string;
  tenant_id: string;
  group_id: string;
  name: string;
  labels: Record<string, string>;
  status: AgentStatus;
  last_seen_at: Date | null;
  description: Record<string, unknown>;
  capabilities: number;
  desired_configuration_id: string | null;
  desired_version: number | null;
  desired_hash: string | null;
  applied_configuration_id: string | null;
  applied_version: number | null;
  applied_hash: string | null;
  applied_status: AppliedStatus | null;
  applied_error: string | null;
  certificate_serial: string | null;
  certificate_not_after: Date | null;
  certificate_revoked_at: Date | null;
  /** The last OpAMP ComponentHealth the agent reported, as protobuf JSON. */
  health: Record<string, unknown> | null;
  /** sha256 of the effective configuration the agent last reported. */
  effective_config_hash: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns the API shows (never the enrollment token or the row version). */
export const AGENT_COLUMNS = [
  'id',
  'tenant_id',
  'group_id',
  'name',
  'labels',
  'status',
  'last_seen_at',
  'description',
  'capabilities',
  'desired_configuration_id',
  'desired_version',
  'desired_hash',
  'applied_configuration_id',
  'applied_version',
  'applied_hash',
  'applied_status',
  'applied_error',
  'certificate_serial',
  'certificate_not_after',
  'certificate_revoked_at',
  'health',
  'effective_config_hash',
  'created_at',
  'updated_at',
] as const;

export type NewAgent = Pick<AgentRow, 'id' | 'tenant_id' | 'group_id'> &
  Partial<Omit<AgentRow, 'id' | 'tenant_id' | 'group_id' | 'created_at' | 'updated_at'>> & {
    enrolled_with_token_id?: string | null;
  };

export interface AgentFilters {
  groupId?: string;
  status?: AgentStatus;
  /** Every pair must match (`labels @> ...`, served by the GIN index `agents_labels`). */
  labels?: Record<string, string>;
  configurationId?: string;
  version?: number;
  /** Substring of the name, or a prefix of the id. */
  q?: string;
  /** By the last ComponentHealth reported (`unknown`: none yet). */
  health?: AgentHealth;
  /** By the status of the last configuration report. */
  applied?: AppliedStatus;
}

export const AGENT_HEALTHS = ['healthy', 'unhealthy', 'unknown'] as const;
export type AgentHealth = (typeof AGENT_HEALTHS)[number];

function toInsert(agent: NewAgent) {
  return {
    ...agent,
    ...(agent.labels ? { labels: JSON.stringify(agent.labels) } : {}),
    ...(agent.description ? { description: JSON.stringify(agent.description) } : {}),
    ...(agent.health ? { health: JSON.stringify(agent.health) } : {}),
  };
}

/** Adds an agent (enrollment, seeding). Its group must be one of its tenant's. */
export async function insertAgent(db: Db, agent: NewAgent): Promise<AgentRow> {
  const [row] = await db('agents')
    .insert(toInsert(agent))
    .returning([...AGENT_COLUMNS]);
  return row as AgentRow;
}

/** Adds many agents in one statement per chunk (seeding). */
export async function insertAgents(db: Db, agents: NewAgent[], chunk = 2000): Promise<void> {
  for (let i = 0; i < agents.length; i += chunk) {
    await db('agents').insert(agents.slice(i, i + chunk).map(toInsert));
  }
}

export async function findAgent(db: Db, tenantId: string, id: string): Promise<AgentRow | undefined> {
  return db('agents')
    .select([...AGENT_COLUMNS])
    .where({ tenant_id: tenantId, id })
    .first();
}

export function listAgentsQuery(db: Db, tenantId: string, filters: AgentFilters): Knex.QueryBuilder {
  const query = db('agents')
    .select([...AGENT_COLUMNS])
    .where({ tenant_id: tenantId });
  if (filters.groupId) query.where({ group_id: filters.groupId });
  if (filters.status) query.where({ status: filters.status });
  if (filters.labels) query.whereRaw('labels @> ?::jsonb', [JSON.stringify(filters.labels)]);
  if (filters.configurationId) query.where({ desired_configuration_id: filters.configurationId });
  if (filters.version !== undefined) query.where({ desired_version: filters.version });
  if (filters.health === 'unknown') query.whereNull('health');
  else if (filters.health)
    query.whereNotNull('health')[filters.health === 'healthy' ? 'whereNull' : 'whereNotNull']('unhealthy_since');
  if (filters.applied) query.where({ applied_status: filters.applied });
  if (filters.q) {
    const q = likeLiteral(filters.q);
    query.where((where) => {
      where
        .whereRaw("name ILIKE ? ESCAPE '\\'", [`%${q}%`])
        .orWhereRaw("id::text LIKE ? ESCAPE '\\'", [`${q.toLowerCase()}%`]);
    });
  }
  return query;
}

/**
 * The tenant's next `limit` agents by id after `afterId` (keyset on the primary key), with
 * the list's filters: what a peer reads for its federated list. `more`: others follow.
 */
export async function agentsAfter(
  db: Db,
  tenantId: string,
  filters: AgentFilters,
  afterId: string | undefined,
  limit: number,
): Promise<{ rows: AgentRow[]; more: boolean }> {
  const query = listAgentsQuery(db, tenantId, filters)
    .orderBy('id')
    .limit(limit + 1);
  if (afterId) query.where('id', '>', afterId);
  const rows = (await query) as AgentRow[];
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/** Locks the agent for a move; its current group is the one it leaves. */
export async function lockAgent(db: Db, tenantId: string, id: string): Promise<AgentRow | undefined> {
  return db('agents')
    .select([...AGENT_COLUMNS])
    .where({ tenant_id: tenantId, id })
    .forNoKeyUpdate()
    .first();
}

export async function setAgentGroup(db: Db, id: string, groupId: string): Promise<AgentRow> {
  const [row] = await db('agents')
    .where({ id })
    .update({ group_id: groupId, row_version: db.raw('row_version + 1'), updated_at: db.fn.now() } as never)
    .returning([...AGENT_COLUMNS]);
  return row as AgentRow;
}

export type MoveOutcome =
  | { kind: 'no-agent' }
  | { kind: 'no-group' }
  | { kind: 'group-deleted'; group: GroupRow }
  | { kind: 'precondition-failed'; group: GroupRow }
  | { kind: 'unchanged'; agent: AgentRow; group: GroupRow }
  | { kind: 'moved'; agent: AgentRow; fromGroupId: string; group: GroupRow };

/**
 * Moves an agent into a live group of its tenant. Locks the agent, then both groups (see
 * lockGroupsForMove), so a concurrent soft delete of the target either sees the new
 * member or is seen by the move; `groupVersions` is the target's If-Match, if any.
 */
export async function moveAgent(
  db: Db,
  tenantId: string,
  agentId: string,
  groupId: string,
  groupVersions?: number[],
): Promise<MoveOutcome> {
  const agent = await lockAgent(db, tenantId, agentId);
  if (!agent) return { kind: 'no-agent' };
  const groups = await lockGroupsForMove(db, tenantId, [agent.group_id, groupId]);
  const target = groups.find((g) => g.id === groupId);
  if (!target) return { kind: 'no-group' };
  if (target.deleted_at) return { kind: 'group-deleted', group: target };
  if (groupVersions && !groupVersions.includes(target.row_version))
    return { kind: 'precondition-failed', group: target };
  if (agent.group_id === groupId) return { kind: 'unchanged', agent, group: target };
  const moved = await setAgentGroup(db, agentId, groupId);
  const versions = await bumpGroupVersions(db, [agent.group_id, groupId]);
  return {
    kind: 'moved',
    agent: moved,
    fromGroupId: agent.group_id,
    group: { ...target, row_version: versions.get(groupId)! },
  };
}

export type RevokeOutcome =
  | { kind: 'no-agent' }
  | { kind: 'handed-over'; agent: AgentRow }
  /**
   * `changed` is false when the agent was already revoked and had nothing left to revoke;
   * `wasConnected`: it was online (or enrolling) until now, so its session ends with this.
   */
  | { kind: 'revoked'; agent: AgentRow; serials: string[]; changed: boolean; wasConnected: boolean };

/**
 * Cuts an agent off: revokes every unrevoked certificate and marks it `revoked`. Its token
 * binding is kept so the gateway refuses that token for this agent: only an enrollment with
 * another bootstrap token brings it back.
 * An agent without a certificate (a token-only agent) is revoked all the same. An agent
 * handed over to another installation is not ours to revoke.
 */
export async function revokeAgent(db: Db, tenantId: string, id: string): Promise<RevokeOutcome> {
  const agent: AgentRow | undefined = await db('agents')
    .select([...AGENT_COLUMNS])
    .where({ tenant_id: tenantId, id })
    .forNoKeyUpdate()
    .first();
  if (!agent) return { kind: 'no-agent' };
  if (agent.status === 'handed-over') return { kind: 'handed-over', agent };
  const serials = await revokeAgentCertificates(db, tenantId, id);
  const changed = serials.length > 0 || agent.status !== 'revoked';
  const wasConnected = agent.status === 'online' || agent.status === 'enrolling';
  if (!changed) return { kind: 'revoked', agent, serials, changed, wasConnected: false };
  const [row] = await db('agents')
    .where({ tenant_id: tenantId, id })
    .update({
      status: 'revoked',
      // The certificate the agent shows is revoked too, even when no issuance row records it.
      certificate_revoked_at: db.raw(
        'CASE WHEN certificate_serial IS NULL THEN certificate_revoked_at ELSE coalesce(certificate_revoked_at, now()) END',
      ),
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    } as never)
    .returning([...AGENT_COLUMNS]);
  return { kind: 'revoked', agent: row as AgentRow, serials, changed, wasConnected };
}

export type DecisionOutcome =
  { kind: 'no-agent' } | { kind: 'not-pending'; agent: AgentRow } | { kind: 'decided'; agent: AgentRow };

/**
 * An operator's decision on an agent held as `pending-approval`: approve (`enrolling`, it
 * is admitted when it reconnects) or reject (`revoked`). Any other status is refused.
 */
export async function decidePendingAgent(
  db: Db,
  tenantId: string,
  id: string,
  status: 'enrolling' | 'revoked',
): Promise<DecisionOutcome> {
  const agent = await lockAgent(db, tenantId, id);
  if (!agent) return { kind: 'no-agent' };
  if (agent.status !== 'pending-approval') return { kind: 'not-pending', agent };
  const [row] = await db('agents')
    .where({ tenant_id: tenantId, id })
    .update({ status, row_version: db.raw('row_version + 1'), updated_at: db.fn.now() } as never)
    .returning([...AGENT_COLUMNS]);
  return { kind: 'decided', agent: row as AgentRow };
}
