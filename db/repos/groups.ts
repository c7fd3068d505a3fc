import type { Knex } from 'knex';
import type { Db } from '../connection';
import { updateVersioned } from '../versioned';
import { memberCountColumn } from './agents/members';
import { isUuid } from '../uuid';

export const DEFAULT_GROUP = 'default';

export interface GroupRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  labels: Record<string, string>;
  row_version: number;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

/** A group as the API shows it: with the number of agents in it. */
export interface GroupView extends GroupRow {
  member_count: number;
}

export interface GroupChanges {
  name: string;
  description: string;
  labels: Record<string, string>;
}

export interface GroupFilters {
  q?: string;
  labels?: Record<string, string>;
  includeDeleted?: boolean;
}

/** Escapes LIKE wildcards so a user's text matches literally. */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function groupsView(db: Db, tenantId: string): Knex.QueryBuilder {
  return db('groups').select('groups.*', memberCountColumn(db)).where('groups.tenant_id', tenantId);
}

/**
 * The tenant's `default` group (where agents go when nothing else is said), created on
 * first need. Two callers racing both get the same row: the partial unique index on live
 * names turns the second insert into a no-op.
 */
export async function ensureDefaultGroup(db: Db, tenantId: string): Promise<GroupRow> {
  const live = () =>
    db<GroupRow>('groups').where({ tenant_id: tenantId, name: DEFAULT_GROUP }).whereNull('deleted_at').first();
  const existing = await live();
  if (existing) return existing;
  await db.raw(
    `INSERT INTO groups (tenant_id, name, description) VALUES (?, ?, ?)
     ON CONFLICT (tenant_id, name) WHERE deleted_at IS NULL DO NOTHING`,
    [tenantId, DEFAULT_GROUP, 'Agents that joined without a group.'],
  );
  return (await live())!;
}

export async function findGroup(db: Db, tenantId: string, id: string): Promise<GroupView | undefined> {
  return groupsView(db, tenantId).where('groups.id', id).first();
}

export function listGroupsQuery(db: Db, tenantId: string, filters: GroupFilters): Knex.QueryBuilder {
  const query = groupsView(db, tenantId);
  if (!filters.includeDeleted) query.whereNull('groups.deleted_at');
  if (filters.q) query.whereRaw("groups.name ILIKE ? ESCAPE '\\'", [`%${likeLiteral(filters.q)}%`]);
  if (filters.labels) query.whereRaw('groups.labels @> ?::jsonb', [JSON.stringify(filters.labels)]);
  return query;
}

/** The first `limit` live groups by name whose name holds `q` (a picker's choices). */
export async function groupsByName(
  db: Db,
  tenantId: string,
  q: string | undefined,
  limit: number,
): Promise<GroupView[]> {
  return listGroupsQuery(db, tenantId, { q })
    .orderBy([{ column: 'groups.name' }, { column: 'groups.id' }])
    .limit(limit);
}

/** Throws the database's unique violation (23505) when a live group has the name. */
export async function insertGroup(db: Db, tenantId: string, group: GroupChanges): Promise<GroupView> {
  const [row] = await db<GroupRow>('groups')
    .insert({ tenant_id: tenantId, ...group, labels: JSON.stringify(group.labels) } as never)
    .returning('*');
  return { ...row!, member_count: 0 };
}

/**
 * Writes a live group if its row version is one of `versions` (absent: unconditionally).
 * As with tenants, the version check is in the UPDATE itself, so of two writers holding
 * the same ETag only the first to commit wins.
 */
export async function updateGroup(
  db: Db,
  tenantId: string,
  id: string,
  changes: GroupChanges,
  versions?: number[],
): Promise<GroupRow | undefined> {
  return updateVersioned<GroupRow>(
    db,
    'groups',
    { tenant_id: tenantId, id },
    versions,
    { ...changes, labels: JSON.stringify(changes.labels) },
    (query) => query.whereNull('deleted_at'),
  );
}

/**
 * Locks the group for a state change (delete, restore). Moves lock the groups they touch
 * too, so a delete that holds this lock sees every member a move has committed, and a
 * move that comes after it sees the group deleted.
 */
export async function lockGroup(db: Db, tenantId: string, id: string): Promise<GroupRow | undefined> {
  return db<GroupRow>('groups').where({ tenant_id: tenantId, id }).forUpdate().first();
}

/** Sets or clears `deleted_at`; restoring throws 23505 when a live group took the name. */
export async function setGroupDeleted(db: Db, id: string, deleted: boolean): Promise<GroupRow> {
  const [row] = await db<GroupRow>('groups')
    .where({ id })
    .update({
      deleted_at: deleted ? db.fn.now() : null,
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    } as never)
    .returning('*');
  return row!;
}

/**
 * Locks the groups an agent moves between (in id order, so two opposite moves cannot
 * deadlock) and bumps their row versions: their `memberCount`, part of what the ETag
 * stands for, changes.
 */
export async function lockGroupsForMove(db: Db, tenantId: string, ids: string[]): Promise<GroupRow[]> {
  const sorted = [...new Set(ids)].sort();
  const rows = await db<GroupRow>('groups')
    .where({ tenant_id: tenantId })
    .whereIn('id', sorted)
    .orderBy('id')
    .forNoKeyUpdate();
  return rows;
}

export async function bumpGroupVersions(db: Db, ids: string[]): Promise<Map<string, number>> {
  const rows: Array<{ id: string; row_version: number }> = await db('groups')
    .whereIn('id', ids)
    .update({ row_version: db.raw('row_version + 1') } as never)
    .returning(['id', 'row_version']);
  return new Map(rows.map((r) => [r.id, r.row_version]));
}

/** Which of `ids` are live (not soft-deleted) groups of the tenant; malformed ids are none. */
export async function liveGroupIds(db: Db, tenantId: string, ids: string[]): Promise<Set<string>> {
  const valid = ids.filter((id) => isUuid(id));
  if (valid.length === 0) return new Set();
  const rows: Array<{ id: string }> = await db('groups')
    .select('id')
    .where({ tenant_id: tenantId })
    .whereNull('deleted_at')
    .whereRaw('id = ANY(?::uuid[])', [valid]);
  return new Set(rows.map((row) => row.id));
}
