import type { Knex } from 'knex';
import type { Db } from '../connection';
import { isUuid } from '../uuid';

export interface ConfigurationRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  format: 'yaml' | 'json' | 'text';
  labels: Record<string, string>;
  latest_version: number;
  published_version: number | null;
  managed_by: string | null;
  /** The file of the managing Git source it comes from, and when that file left the branch. */
  source_path: string | null;
  source_removed_at: Date | null;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

export type NewConfiguration = Pick<ConfigurationRow, 'tenant_id' | 'name' | 'description' | 'format' | 'labels'> & {
  managed_by?: string | null;
  source_path?: string | null;
};

export type ConfigurationChanges = Pick<ConfigurationRow, 'name' | 'description' | 'labels'>;

const CONFIGURATION_COLUMNS: string[] = [
  'id',
  'tenant_id',
  'name',
  'description',
  'format',
  'labels',
  'latest_version',
  'published_version',
  'managed_by',
  'source_path',
  'source_removed_at',
  'row_version',
  'created_at',
  'updated_at',
];

export async function insertConfiguration(db: Db, row: NewConfiguration): Promise<ConfigurationRow> {
  const [created] = await db('configurations')
    .insert({ ...row, labels: JSON.stringify(row.labels) })
    .returning(CONFIGURATION_COLUMNS);
  return created as ConfigurationRow;
}

export async function findConfiguration(db: Db, tenantId: string, id: string): Promise<ConfigurationRow | undefined> {
  return db('configurations').select(CONFIGURATION_COLUMNS).where({ tenant_id: tenantId, id }).first() as Promise<
    ConfigurationRow | undefined
  >;
}

/**
 * Reads the configuration and locks its row until the transaction ends, so that checks on
 * it (If-Match, Git management) and the write that follows are one atomic step: a second
 * writer waits here and then sees the first one's result.
 */
export async function lockConfiguration(
  db: Knex.Transaction,
  tenantId: string,
  id: string,
): Promise<ConfigurationRow | undefined> {
  return db('configurations')
    .select(CONFIGURATION_COLUMNS)
    .where({ tenant_id: tenantId, id })
    .forUpdate()
    .first() as Promise<ConfigurationRow | undefined>;
}

/** Writes name, description and labels of a locked configuration; bumps its row version. */
export async function updateConfiguration(
  db: Db,
  id: string,
  changes: ConfigurationChanges,
): Promise<ConfigurationRow> {
  const [row] = await db('configurations')
    .where({ id })
    .update({
      ...changes,
      labels: JSON.stringify(changes.labels),
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    })
    .returning(CONFIGURATION_COLUMNS);
  return row as ConfigurationRow;
}

export interface ConfigurationFilters {
  q?: string;
  format?: string;
  labels?: Record<string, string>;
}

/** `text` matched literally inside a LIKE pattern (with `ESCAPE '\\'`). */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

export function listConfigurationsQuery(db: Db, tenantId: string, filters: ConfigurationFilters): Knex.QueryBuilder {
  const query = db('configurations').select(CONFIGURATION_COLUMNS).where({ tenant_id: tenantId });
  if (filters.q) query.whereRaw("name ILIKE ? ESCAPE '\\'", [`%${escapeLike(filters.q)}%`]);
  if (filters.format) query.where({ format: filters.format });
  if (filters.labels && Object.keys(filters.labels).length > 0) {
    query.whereRaw('labels @> ?::jsonb', [JSON.stringify(filters.labels)]);
  }
  return query;
}

/**
 * Takes the next version number of a locked configuration (`latest_version`). The counter
 * lives on the configuration row, so concurrent saves queue on its lock and get
 * consecutive numbers; a failed insert rolls the counter back with the transaction.
 */
export async function allocateVersionNumber(db: Knex.Transaction, id: string): Promise<ConfigurationRow> {
  const [configuration] = await db('configurations')
    .where({ id })
    .update({
      latest_version: db.raw('latest_version + 1'),
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    })
    .returning(CONFIGURATION_COLUMNS);
  return configuration as ConfigurationRow;
}

/** `published_version` is the highest version published: raised to `version` if below. */
export async function raisePublishedVersion(
  db: Knex.Transaction,
  id: string,
  version: number,
): Promise<ConfigurationRow> {
  const [configuration] = await db('configurations')
    .where({ id })
    .update({
      published_version: db.raw('GREATEST(coalesce(published_version, 0), ?)', [version]),
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    })
    .returning(CONFIGURATION_COLUMNS);
  return configuration as ConfigurationRow;
}

/**
 * Hands a deleted Git source's configurations back to the API: no longer managed (edits
 * allowed again), no source file; they keep their versions. Returns how many.
 */
export async function releaseManagedConfigurations(db: Db, sourceId: string): Promise<number> {
  return db('configurations')
    .where({ managed_by: sourceId })
    .update({
      managed_by: null,
      source_path: null,
      source_removed_at: null,
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    });
}

/** What an agent's `remote_config` names of the configuration (any tenant: the caller knows the agent's). */
export async function findConfigurationNameAndFormat(
  db: Db,
  id: string,
): Promise<Pick<ConfigurationRow, 'name' | 'format'> | undefined> {
  return db('configurations').select('name', 'format').where({ id }).first();
}

/** What a policy sees of a configuration. */
export interface TargetConfigurationRow {
  id: string;
  name: string;
  format: string;
  labels: Record<string, unknown>;
  latest_version: number;
  published_version: number | null;
}

export async function findTargetConfiguration(
  db: Db,
  tenantId: string,
  id: string,
): Promise<TargetConfigurationRow | undefined> {
  if (!isUuid(id)) return undefined;
  const row: TargetConfigurationRow | undefined = await db('configurations')
    .select('id', 'name', 'format', 'labels', 'latest_version', 'published_version')
    .where({ tenant_id: tenantId, id })
    .first();
  return row;
}

export async function findConfigurationByName(
  db: Db,
  tenantId: string,
  name: string,
): Promise<ConfigurationRow | undefined> {
  return db('configurations').select(CONFIGURATION_COLUMNS).where({ tenant_id: tenantId, name }).first() as Promise<
    ConfigurationRow | undefined
  >;
}

/** The configurations a Git source manages, with the file each came from. */
export async function listManagedConfigurations(db: Db, sourceId: string): Promise<ConfigurationRow[]> {
  return db('configurations').select(CONFIGURATION_COLUMNS).where({ managed_by: sourceId }) as Promise<
    ConfigurationRow[]
  >;
}

/**
 * Where a Git-managed configuration's file is: its path in the branch, and whether it has
 * left the branch (`source_removed_at` set) or is there (cleared).
 */
export async function setSourceFile(
  db: Db,
  id: string,
  file: { path: string; removed: boolean },
): Promise<ConfigurationRow> {
  const [row] = await db('configurations')
    .where({ id })
    .update({
      source_path: file.path,
      source_removed_at: file.removed ? db.fn.now() : null,
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    })
    .returning(CONFIGURATION_COLUMNS);
  return row as ConfigurationRow;
}
