import type { Knex } from 'knex';
import type { Db } from '../../connection';

/** Agents as members of their group (`group_id`). */

/** A group's number of agents, as the `member_count` column of a query over `groups`. */
export function memberCountColumn(db: Db): Knex.Raw {
  // index-only on agents_tenant_group
  return db.raw(
    '(SELECT count(*) FROM agents a WHERE a.tenant_id = groups.tenant_id AND a.group_id = groups.id)::int AS member_count',
  );
}

/** Whether the group has agents (a group with members cannot be deleted). */
export async function groupHasAgents(db: Db, tenantId: string, groupId: string): Promise<boolean> {
  return Boolean(await db('agents').select(db.raw('1')).where({ tenant_id: tenantId, group_id: groupId }).first());
}
