import type { Knex } from 'knex';
import type { Db } from '../connection';

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
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  configuration_id: string;
  version: number;
  state: 'draft' | 'published';
  content_hash: string;
  author: string;
  created_at: Date;
  published_at: Date | null;
  published_by: string | null;
}

export interface VersionWithContent extends VersionRow {
  content: string;
}

export type NewConfiguration = Pick<ConfigurationRow, 'tenant_id' | 'name' | 'description' | 'format' | 'labels'> & {
  managed_by?: string | null;
};

export type ConfigurationChanges = Pick<ConfigurationRow, 'name' | 'description' | 'labels'>;

const CONFIGURATION_COLUMNS: string[] = [
  'id', 'tenant_id', 'name', 'description', 'format', 'labels', 'latest_version',
  'published_version', 'managed_by', 'row_version', 'created_at', 'updated_at',
];

/** Everything but the content, which can be 1 MiB: lists never read it. */
const VERSION_COLUMNS: string[] = ['configuration_id', 'version', 'state', 'content_hash', 'author', 'created_at', 'published_at', 'published_by'];

export async function insertConfiguration(db: Db, row: NewConfiguration): Promise<ConfigurationRow> {
  const [created] = await db('configurations')
    .insert({ ...row, labels: JSON.stringify(row.labels) })
    .returning(CONFIGURATION_COLUMNS);
  return created as ConfigurationRow;
}

export async function findConfiguration(db: Db, tenantId: string, id: string): Promise<ConfigurationRow | undefined> {
  return db('configurations').select(CONFIGURATION_COLUMNS).where({ tenant_id: tenantId, id }).first() as Promise<ConfigurationRow | undefined>;
}

/**
 * Reads the configuration and locks its row until the transaction ends, so that checks on
 * it (If-Match, Git management) and the write that follows are one atomic step: a second
 * writer waits here and then sees the first one's result.
 */
export async function lockConfiguration(db: Knex.Transaction, tenantId: string, id: string): Promise<ConfigurationRow | undefined> {
  return db('configurations').select(CONFIGURATION_COLUMNS).where({ tenant_id: tenantId, id }).forUpdate().first() as Promise<ConfigurationRow | undefined>;
}

/** Writes name, description and labels of a locked configuration; bumps its row version. */
export async function updateConfiguration(db: Db, id: string, changes: ConfigurationChanges): Promise<ConfigurationRow> {
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

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

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
 * Allocates the next version number of a locked configuration and stores the draft under
 * it. The counter lives on the configuration row, so concurrent saves queue on its lock and
 * get consecutive numbers; a failed insert rolls the counter back with the transaction.
 */
export async function insertDraft(
  db: Knex.Transaction,
  configurationId: string,
  draft: { content: string; content_hash: string; author: string },
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const [configuration] = await db('configurations')
    .where({ id: configurationId })
    .update({ latest_version: db.raw('latest_version + 1'), row_version: db.raw('row_version + 1'), updated_at: db.fn.now() })
    .returning(CONFIGURATION_COLUMNS);
  const [version] = await db('configuration_versions')
    .insert({ configuration_id: configurationId, version: (configuration as ConfigurationRow).latest_version, state: 'draft', ...draft })
    .returning(VERSION_COLUMNS);
  return { configuration: configuration as ConfigurationRow, version: version as VersionRow };
}

export function listVersionsQuery(db: Db, configurationId: string, filters: { state?: string }): Knex.QueryBuilder {
  const query = db('configuration_versions').select(VERSION_COLUMNS).where({ configuration_id: configurationId });
  if (filters.state) query.where({ state: filters.state });
  return query;
}

export async function findVersion(db: Db, configurationId: string, version: number): Promise<VersionRow | undefined> {
  return db('configuration_versions').select(VERSION_COLUMNS).where({ configuration_id: configurationId, version }).first() as Promise<VersionRow | undefined>;
}

export async function findVersionWithContent(db: Db, configurationId: string, version: number): Promise<VersionWithContent | undefined> {
  return db('configuration_versions')
    .select([...VERSION_COLUMNS, 'content'])
    .where({ configuration_id: configurationId, version })
    .first() as Promise<VersionWithContent | undefined>;
}

/**
 * Publishes a draft of a locked configuration: the version becomes immutable, and the
 * configuration's `published_version` is the highest published number.
 */
export async function publishDraft(
  db: Knex.Transaction,
  configurationId: string,
  version: number,
  publishedBy: string,
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const [published] = await db('configuration_versions')
    .where({ configuration_id: configurationId, version, state: 'draft' })
    .update({ state: 'published', published_at: db.fn.now(), published_by: publishedBy })
    .returning(VERSION_COLUMNS);
  const [configuration] = await db('configurations')
    .where({ id: configurationId })
    .update({
      published_version: db.raw('GREATEST(coalesce(published_version, 0), ?)', [version]),
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    })
    .returning(CONFIGURATION_COLUMNS);
  return { configuration: configuration as ConfigurationRow, version: published as VersionRow };
}
