import type { Knex } from 'knex';
import type { Db } from '../connection';
import { updateVersioned } from '../versioned';
import { likeLiteral } from './groups';

export type GitCredentialsKind = 'https' | 'ssh';

export interface GitSourceRow {
  id: string;
  tenant_id: string;
  name: string;
  repo_url: string;
  branch: string;
  path: string;
  poll_interval_seconds: number;
  auto_publish: boolean;
  paused: boolean;
  credentials_kind: GitCredentialsKind | null;
  credentials_iv: Buffer | null;
  credentials_tag: Buffer | null;
  credentials_ciphertext: Buffer | null;
  /** PEM: the CA certificates git trusts for this source alone (null: the system's store). */
  ca_certificate: string | null;
  webhook_token_hash: Buffer | null;
  webhook_token_created_at: Date | null;
  rollout_template: unknown;
  last_synced_sha: string | null;
  last_synced_at: Date | null;
  created_by: string;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

/** The newest sync run of a source, in short: what a source's presentation shows as `lastRun`. */
export interface LastSyncRun {
  id: string;
  trigger: 'webhook' | 'poll' | 'manual';
  commit_sha: string | null;
  status: 'running' | 'succeeded' | 'failed';
  error: string | null;
  /** ISO timestamps, as Postgres writes them into JSON. */
  started_at: string;
  finished_at: string | null;
}

/** A source as the API shows it: with its newest run. */
export interface GitSourceView extends GitSourceRow {
  last_run: LastSyncRun | null;
}

/** The columns the API may change; the sealed credentials and the webhook hash have their own writes. */
export type GitSourceSettings = Pick<
  GitSourceRow,
  | 'name'
  | 'repo_url'
  | 'branch'
  | 'path'
  | 'poll_interval_seconds'
  | 'auto_publish'
  | 'rollout_template'
  | 'ca_certificate'
>;

export interface GitSourceFilters {
  q?: string;
  paused?: boolean;
}

/** Sources with their newest run (one index probe per source on git_sync_runs_source_started). */
function gitSourcesView(db: Db, tenantId: string): Knex.QueryBuilder {
  const lastRun = db.raw(`(
    SELECT jsonb_build_object('id', r.id, 'trigger', r.trigger, 'commit_sha', r.commit_sha, 'status', r.status,
                              'error', r.error, 'started_at', r.started_at, 'finished_at', r.finished_at)
      FROM git_sync_runs r WHERE r.source_id = git_sources.id
     ORDER BY r.started_at DESC, r.id DESC LIMIT 1) AS last_run`);
  return db('git_sources').select('git_sources.*', lastRun).where('git_sources.tenant_id', tenantId);
}

export async function findGitSource(db: Db, tenantId: string, id: string): Promise<GitSourceView | undefined> {
  return gitSourcesView(db, tenantId).where('git_sources.id', id).first();
}

export function listGitSourcesQuery(db: Db, tenantId: string, filters: GitSourceFilters): Knex.QueryBuilder {
  const query = gitSourcesView(db, tenantId);
  if (filters.q) {
    const like = `%${likeLiteral(filters.q)}%`;
    query.whereRaw("(git_sources.name ILIKE ? ESCAPE '\\' OR git_sources.repo_url ILIKE ? ESCAPE '\\')", [like, like]);
  }
  if (filters.paused !== undefined) query.where('git_sources.paused', filters.paused);
  return query;
}

const jsonColumns = (settings: Partial<GitSourceSettings>) =>
  'rollout_template' in settings
    ? {
        ...settings,
        rollout_template: settings.rollout_template == null ? null : JSON.stringify(settings.rollout_template),
      }
    : settings;

/** Throws the database's unique violation (23505) when the tenant has a source of that name. */
export async function insertGitSource(
  db: Db,
  source: GitSourceSettings & Pick<GitSourceRow, 'id' | 'tenant_id' | 'created_by'> & Partial<GitSourceRow>,
): Promise<GitSourceView> {
  const [row] = await db<GitSourceRow>('git_sources')
    .insert(jsonColumns(source) as never)
    .returning('*');
  return { ...row!, last_run: null };
}

/** Locks the source for a change (If-Match checked by the caller against the locked row). */
export async function lockGitSource(db: Db, tenantId: string, id: string): Promise<GitSourceRow | undefined> {
  return db<GitSourceRow>('git_sources').where({ tenant_id: tenantId, id }).forUpdate().first();
}

/**
 * Writes a source if its row version is one of `versions` (absent: unconditionally), in the
 * UPDATE itself; undefined when no row matched (the caller tells 404 from 412).
 */
export async function updateGitSource(
  db: Db,
  tenantId: string,
  id: string,
  changes: Partial<GitSourceRow>,
  versions?: number[],
): Promise<GitSourceRow | undefined> {
  return updateVersioned<GitSourceRow>(db, 'git_sources', { tenant_id: tenantId, id }, versions, jsonColumns(changes));
}

export async function deleteGitSource(db: Db, id: string): Promise<void> {
  await db('git_sources').where({ id }).delete();
}

/** The source a webhook names, whatever its tenant (the webhook's token decides who may call). */
export async function findGitSourceById(db: Db, id: string): Promise<GitSourceRow | undefined> {
  return db<GitSourceRow>('git_sources').where({ id }).first();
}

/** Every source not paused, of every tenant, a page at a time after `afterId` (ordered by id). */
export async function activeGitSourcesAfter(
  db: Db,
  afterId: string | null,
  limit: number,
): Promise<Array<{ id: string; tenant_id: string; name: string }>> {
  const query = db('git_sources').select('id', 'tenant_id', 'name').where({ paused: false }).orderBy('id').limit(limit);
  if (afterId) query.where('id', '>', afterId);
  return query;
}

/** Which of `ids` are sources (of any tenant). */
export async function existingGitSourceIds(db: Db, ids: string[]): Promise<Set<string>> {
  const rows: Array<{ id: string }> = await db('git_sources').whereIn('id', ids).select('id');
  return new Set(rows.map((row) => row.id));
}

/**
 * Holds off the source's deletion until the transaction ends (FOR KEY SHARE: edits and the
 * sync bookkeeping still go on); undefined once the source is deleted.
 */
export async function holdGitSource(db: Db, id: string): Promise<{ id: string } | undefined> {
  return db('git_sources').select('id').where({ id }).forKeyShare().first();
}

/**
 * Records the commit a sync run applied, so the next wake-up at the same tip does nothing,
 * with a new ETag (the source shows it); false when the source is gone.
 */
export async function markGitSourceSynced(db: Db, id: string, sha: string): Promise<boolean> {
  const updated = await db('git_sources')
    .where({ id })
    .update({ last_synced_sha: sha, last_synced_at: db.fn.now(), row_version: db.raw('row_version + 1') } as never);
  return updated > 0;
}

/**
 * A new ETag for a source whose presentation changed without its settings (its last run
 * ended): a cached copy must not be answered 304. False when the source is gone.
 */
export async function touchGitSource(db: Db, id: string): Promise<boolean> {
  const updated = await db('git_sources')
    .where({ id })
    .update({ row_version: db.raw('row_version + 1') } as never);
  return updated > 0;
}
