import type { Knex } from 'knex';
import type { Db } from '../connection';
import { allocateVersionNumber, raisePublishedVersion, type ConfigurationRow } from './configurations';

export interface VersionRow {
  configuration_id: string;
  version: number;
  state: 'draft' | 'published';
  content_hash: string;
  author: string;
  created_at: Date;
  published_at: Date | null;
  published_by: string | null;
  /** The commit a Git sync saved it from; null for versions saved through the API. */
  provenance: VersionProvenance | null;
}

export interface VersionProvenance {
  sourceId: string;
  path: string;
  commitSha: string;
  author: string;
  message: string;
}

export interface VersionWithContent extends VersionRow {
  content: string;
}

/** Everything but the content, which can be 1 MiB: lists never read it. */
const VERSION_COLUMNS: string[] = [
  'configuration_id',
  'version',
  'state',
  'content_hash',
  'author',
  'created_at',
  'published_at',
  'published_by',
  'provenance',
];

/**
 * Stores a draft of a locked configuration under its next version number (see
 * allocateVersionNumber: concurrent saves get consecutive numbers).
 */
export async function insertDraft(
  db: Knex.Transaction,
  configurationId: string,
  draft: { content: string; content_hash: string; author: string; provenance?: VersionProvenance },
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const configuration = await allocateVersionNumber(db, configurationId);
  const { provenance, ...fields } = draft;
  const [version] = await db('configuration_versions')
    .insert({
      configuration_id: configurationId,
      version: configuration.latest_version,
      state: 'draft',
      ...fields,
      provenance: provenance ? JSON.stringify(provenance) : null,
    })
    .returning(VERSION_COLUMNS);
  return { configuration, version: version as VersionRow };
}

export function listVersionsQuery(db: Db, configurationId: string, filters: { state?: string }): Knex.QueryBuilder {
  const query = db('configuration_versions').select(VERSION_COLUMNS).where({ configuration_id: configurationId });
  if (filters.state) query.where({ state: filters.state });
  return query;
}

export async function findVersion(db: Db, configurationId: string, version: number): Promise<VersionRow | undefined> {
  return db('configuration_versions')
    .select(VERSION_COLUMNS)
    .where({ configuration_id: configurationId, version })
    .first() as Promise<VersionRow | undefined>;
}

/** The configuration's version with this content hash, a published one first (the newest of them). */
export async function findVersionByHash(
  db: Db,
  configurationId: string,
  contentHash: string,
): Promise<VersionRow | undefined> {
  return db('configuration_versions')
    .select(VERSION_COLUMNS)
    .where({ configuration_id: configurationId, content_hash: contentHash })
    .orderByRaw("state = 'published' DESC, version DESC")
    .first() as Promise<VersionRow | undefined>;
}

export async function findVersionWithContent(
  db: Db,
  configurationId: string,
  version: number,
): Promise<VersionWithContent | undefined> {
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
  const configuration = await raisePublishedVersion(db, configurationId, version);
  return { configuration, version: published as VersionRow };
}

/** What a policy sees of a version. */
export interface TargetVersionRow {
  version: number;
  state: string;
  content: string;
  content_hash: string;
  author: string;
}

export async function findTargetVersion(
  db: Db,
  configurationId: string,
  version: number,
): Promise<TargetVersionRow | undefined> {
  const row: TargetVersionRow | undefined = await db('configuration_versions')
    .select('version', 'state', 'content', 'content_hash', 'author')
    .where({ configuration_id: configurationId, version })
    .first();
  return row;
}
