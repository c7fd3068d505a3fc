/**
 * What operators do to groups: create one, change it, soft-delete an empty one, restore it.
 * The `default` group (where agents without a group go) is never renamed or deleted. Each
 * operation writes its `group.*` event, the group as the API shows it.
 */
import type { Db } from '../db/connection';
import { groupHasAgents } from '../db/repos/agents';
import { emitEvents, type EventType } from '../db/repos/events';
import {
  DEFAULT_GROUP,
  ensureDefaultGroup,
  findGroup,
  insertGroup,
  lockGroup,
  setGroupDeleted,
  updateGroup as updateGroupRow,
  type GroupChanges,
  type GroupRow,
  type GroupView,
} from '../db/repos/groups';
import { DomainError, nameTaken, NotFoundError, refuseDuplicate, StaleVersionError } from './errors';

/** How a group reads, in the API and in its events. */
export function groupView(row: GroupRow, memberCount: number) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    labels: row.labels,
    memberCount,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deletedAt: row.deleted_at?.toISOString() ?? null,
  };
}

async function announce(db: Db, type: EventType, row: GroupRow, memberCount: number) {
  const data = groupView(row, memberCount);
  await emitEvents(db, [{ tenantId: row.tenant_id, type, source: '/api/groups', subject: row.id, data }]);
}

const refuseStale = (row: GroupRow, versions: number[] | undefined) => {
  if (versions && !versions.includes(row.row_version)) throw new StaleVersionError('group', row.id);
};

export async function createGroup(db: Db, tenantId: string, fields: GroupChanges): Promise<GroupView> {
  await ensureDefaultGroup(db, tenantId); // so `default` is taken before anyone else claims it
  const row = await insertGroup(db, tenantId, fields).catch(nameTaken('live group', fields.name));
  await announce(db, 'group.created', row, row.member_count);
  return row;
}

/** Replaces a live group's name, description and labels (If-Match: `versions`). */
export async function updateGroup(
  db: Db,
  tenantId: string,
  id: string,
  changes: GroupChanges,
  versions?: number[],
): Promise<{ row: GroupRow; memberCount: number }> {
  const current = await findGroup(db, tenantId, id);
  if (!current) throw new NotFoundError('group', id);
  if (current.name === DEFAULT_GROUP && !current.deleted_at && changes.name !== DEFAULT_GROUP) {
    throw new DomainError(`The '${DEFAULT_GROUP}' group cannot be renamed: agents without a group join it.`);
  }
  const row = await updateGroupRow(db, tenantId, id, changes, versions).catch(nameTaken('live group', changes.name));
  if (!row) {
    const now = await findGroup(db, tenantId, id);
    if (!now) throw new NotFoundError('group', id);
    if (now.deleted_at) throw new DomainError(`Group '${id}' is deleted; restore it before changing it.`);
    throw new StaleVersionError('group', id);
  }
  await announce(db, 'group.updated', row, current.member_count);
  return { row, memberCount: current.member_count };
}

/** Soft-deletes an empty group other than `default`. */
export async function deleteGroup(db: Db, tenantId: string, id: string, versions?: number[]): Promise<GroupRow> {
  const locked = await lockGroup(db, tenantId, id);
  if (!locked) throw new NotFoundError('group', id);
  refuseStale(locked, versions);
  if (locked.deleted_at) throw new DomainError(`Group '${locked.name}' is already deleted.`);
  if (locked.name === DEFAULT_GROUP)
    throw new DomainError(`The '${DEFAULT_GROUP}' group cannot be deleted: agents without a group join it.`);
  if (await groupHasAgents(db, tenantId, id)) {
    throw new DomainError(`Group '${locked.name}' still has agents; move them to another group first.`);
  }
  const row = await setGroupDeleted(db, id, true);
  await announce(db, 'group.deleted', row, 0);
  return row;
}

/** Restores a soft-deleted group, unless a live group took its name meanwhile. */
export async function restoreGroup(db: Db, tenantId: string, id: string, versions?: number[]): Promise<GroupView> {
  const locked = await lockGroup(db, tenantId, id);
  if (!locked) throw new NotFoundError('group', id);
  refuseStale(locked, versions);
  if (!locked.deleted_at) throw new DomainError(`Group '${locked.name}' is not deleted.`);
  await setGroupDeleted(db, id, false).catch(
    refuseDuplicate(
      () => new DomainError(`A live group named '${locked.name}' exists; rename it before restoring this one.`),
    ),
  );
  const row = (await findGroup(db, tenantId, id))!;
  await announce(db, 'group.restored', row, row.member_count);
  return row;
}
