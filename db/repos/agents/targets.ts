import type { Db } from '../../connection';
import { rolloutAgentIdsPage, rolloutMemberIds } from '../rollout-agents';
import type { AgentRow } from './inventory';
import { isUuid } from '../../uuid';

/** The agents a policy evaluation reads: whom a push or rollout names, and what it sees of each. */

/** What a policy sees of an agent. */
export type TargetAgentRow = Pick<
  AgentRow,
  | 'id'
  | 'name'
  | 'group_id'
  | 'status'
  | 'labels'
  | 'desired_configuration_id'
  | 'desired_version'
  | 'desired_hash'
  | 'applied_configuration_id'
  | 'applied_version'
  | 'applied_hash'
  | 'applied_status'
>;

/** Which of `ids` are agents of the tenant. */
export async function existingAgentIds(db: Db, tenantId: string, ids: string[]): Promise<Set<string>> {
  const valid = ids.filter((id) => isUuid(id));
  if (valid.length === 0) return new Set();
  const rows: Array<{ id: string }> = await db('agents')
    .select('id')
    .where({ tenant_id: tenantId })
    .whereRaw('id = ANY(?::uuid[])', [valid]);
  return new Set(rows.map((row) => row.id));
}

/**
 * What a push names: group ids and agent ids, each checked to exist (ids travel as one array
 * parameter, so any count fits), or a rollout's agents (its own membership table, so a
 * rollout of 100,000 agents is not sent to Postgres as 100,000 ids on every page).
 */
export type AgentTarget = { groupIds: string[]; agentIds: string[] } | { rolloutId: string };

/** The target's agents, as `agents` (a rollout's: those its membership rows name). */
function inTarget(db: Db, tenantId: string, target: AgentTarget) {
  const agents = db('agents').where({ tenant_id: tenantId });
  if ('rolloutId' in target) return agents.whereIn('id', rolloutMemberIds(db, target.rolloutId));
  return agents.where((q) => {
    q.whereRaw('group_id = ANY(?::uuid[])', [target.groupIds]).orWhereRaw('id = ANY(?::uuid[])', [target.agentIds]);
  });
}

export async function countTargetAgents(db: Db, tenantId: string, target: AgentTarget): Promise<number> {
  const row = await inTarget(db, tenantId, target).count({ n: '*' }).first();
  return Number((row as { n: string | number } | undefined)?.n ?? 0);
}

const TARGET_AGENT_COLUMNS = [
  'id',
  'name',
  'group_id',
  'status',
  'labels',
  'desired_configuration_id',
  'desired_version',
  'desired_hash',
  'applied_configuration_id',
  'applied_version',
  'applied_hash',
  'applied_status',
] as const;

/**
 * One page of the agents a target names (members of the groups plus the agents listed,
 * each once; or a rollout's), in id order after `afterId`: keyset pages, so a wide target
 * is read in bounded pieces. `after` is the next page's key, null after the last page.
 *
 * A rollout's page is two statements — the next ids from its membership's primary key, then
 * those agents — because as one join the planner, judging a membership table filled a
 * moment ago by stale statistics, sorted every remaining row for each page (170 ms a page
 * at 100,000 agents instead of a few).
 */
export async function targetAgentsPage(
  db: Db,
  tenantId: string,
  target: AgentTarget,
  afterId: string | null,
  limit: number,
): Promise<{ agents: TargetAgentRow[]; after: string | null }> {
  if ('rolloutId' in target) {
    const page = await rolloutAgentIdsPage(db, target.rolloutId, afterId, limit);
    const agents: TargetAgentRow[] = page.length
      ? await db('agents')
          .select(...TARGET_AGENT_COLUMNS)
          .where({ tenant_id: tenantId })
          .whereRaw('id = ANY(?::uuid[])', [page])
          .orderBy('id')
      : [];
    return { agents, after: page.length === limit ? page[page.length - 1]! : null };
  }
  const query = inTarget(db, tenantId, target)
    .select(...TARGET_AGENT_COLUMNS)
    .orderBy('id')
    .limit(limit);
  if (afterId) query.where('id', '>', afterId);
  const agents: TargetAgentRow[] = await query;
  return { agents, after: agents.length === limit ? agents[agents.length - 1]!.id : null };
}
