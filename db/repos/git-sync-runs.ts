import type { Knex } from 'knex';
import type { Db } from '../connection';
import type { GitSyncTrigger } from '../../domain/git/sync-trigger';

export type SyncRunStatus = 'running' | 'succeeded' | 'failed';

/** What a run did to one file's configuration. */
export interface SyncRunChange {
  path: string;
  configurationId: string;
  name: string;
  /** restored: the file came back (unchanged) after it had been removed. */
  change: 'created' | 'updated' | 'removed' | 'restored';
  /** The version saved (created, updated). */
  version?: number;
  published?: boolean;
  /** The rollout the source's rollout template started for the published version. */
  rolloutId?: string;
}

export interface SyncRunFileError {
  path: string;
  error: string;
}

export interface SyncRunRow {
  id: string;
  tenant_id: string;
  source_id: string;
  trigger: GitSyncTrigger;
  commit_sha: string | null;
  status: SyncRunStatus;
  changes: SyncRunChange[];
  file_errors: SyncRunFileError[];
  error: string | null;
  rollout_id: string | null;
  /** Every rollout the run's template created, each recorded in its own transaction. */
  rollout_ids: string[];
  started_at: Date;
  finished_at: Date | null;
}

export async function insertSyncRun(
  db: Db,
  run: Pick<SyncRunRow, 'tenant_id' | 'source_id' | 'trigger' | 'commit_sha'>,
): Promise<SyncRunRow> {
  const [row] = await db<SyncRunRow>('git_sync_runs')
    .insert({ ...run, status: 'running' } as never)
    .returning('*');
  return row!;
}

export async function finishSyncRun(
  db: Db,
  id: string,
  outcome: Pick<SyncRunRow, 'status' | 'changes' | 'file_errors' | 'error' | 'rollout_id'> &
    Partial<Pick<SyncRunRow, 'commit_sha'>>,
): Promise<SyncRunRow> {
  const [row] = await db<SyncRunRow>('git_sync_runs')
    .where({ id })
    .update({
      ...outcome,
      changes: JSON.stringify(outcome.changes),
      file_errors: JSON.stringify(outcome.file_errors),
      finished_at: db.fn.now(),
    } as never)
    .returning('*');
  return row!;
}

/** A source's runs; the caller pages newest first on (started_at, id). */
export function listSyncRunsQuery(db: Db, tenantId: string, sourceId: string): Knex.QueryBuilder {
  return db('git_sync_runs').select('*').where({ tenant_id: tenantId, source_id: sourceId });
}

/** Records, in the transaction that creates it, a rollout the run's template created. */
export async function addSyncRunRollout(db: Db, runId: string, rolloutId: string): Promise<void> {
  await db('git_sync_runs')
    .where({ id: runId })
    .update({ rollout_ids: db.raw('array_append(rollout_ids, ?::uuid)', [rolloutId]) });
}

export async function findSyncRun(db: Db, id: string): Promise<SyncRunRow | undefined> {
  return db<SyncRunRow>('git_sync_runs').where({ id }).first();
}

/** A source's newest run, if any. */
export async function latestSyncRun(db: Db, sourceId: string): Promise<SyncRunRow | undefined> {
  return db<SyncRunRow>('git_sync_runs')
    .where({ source_id: sourceId })
    .orderBy([
      { column: 'started_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .first();
}
