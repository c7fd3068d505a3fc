import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/connection';
import { insertAgent, insertAgents, type AgentRow, type NewAgent } from '../../db/repos/agents';
import { ensureDefaultGroup } from '../../db/repos/groups';
import { ensureTenant } from '../../db/repos/tenants';

type AgentFields = Partial<Omit<NewAgent, 'tenant_id'>>;

/** One agent of `tenant`, in its `default` group unless `fields.group_id` says otherwise. */
export async function seedAgent(db: Db, tenant: string, fields: AgentFields = {}): Promise<AgentRow> {
  await ensureTenant(db, tenant);
  const groupId = fields.group_id ?? (await ensureDefaultGroup(db, tenant)).id;
  return insertAgent(db, {
    id: randomUUID(),
    name: `agent-${randomUUID().slice(0, 8)}`,
    ...fields,
    tenant_id: tenant,
    group_id: groupId,
  });
}

/**
 * `count` agents of `tenant`; `fields(i)` gives the i-th agent's fields (labels, status,
 * group...). Returns the ids in insertion order.
 */
export async function seedAgents(
  db: Db,
  tenant: string,
  count: number,
  fields: (i: number) => AgentFields = () => ({}),
): Promise<string[]> {
  await ensureTenant(db, tenant);
  const defaultGroup = (await ensureDefaultGroup(db, tenant)).id;
  const agents: NewAgent[] = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    name: `agent-${String(i).padStart(6, '0')}`,
    group_id: defaultGroup,
    ...fields(i),
    tenant_id: tenant,
  }));
  await insertAgents(db, agents);
  return agents.map((a) => a.id);
}
