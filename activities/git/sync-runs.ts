/**
 * A sync run's records: started (`running`) as soon as a tip is due, so it is visible while
 * the sweep works, or failed with git's words; each with its `git.sync-run.*` event.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { emitEvents, type EventType, type NewEvent } from '../../db/repos/events';
import { touchGitSource, type GitSourceRow } from '../../db/repos/git-sources';
import { finishSyncRun, insertSyncRun, latestSyncRun, type SyncRunRow } from '../../db/repos/git-sync-runs';
import type { GitSyncTrigger } from '../../domain/git/sync-trigger';

/** The run's `git.sync-run.*` event (`data` adds what the outcome says). */
export function runEvent(run: SyncRunRow, type: EventType, data: Record<string, unknown> = {}): NewEvent {
  return {
    tenantId: run.tenant_id,
    type,
    source: `/api/git-sources/${run.source_id}`,
    subject: run.source_id,
    data: { runId: run.id, sourceId: run.source_id, trigger: run.trigger, commitSha: run.commit_sha, ...data },
  };
}

/** Records a run as started (`running`) at the commit, with its `git.sync-run.started` event. */
export async function startRun(
  db: Knex,
  source: GitSourceRow,
  trigger: GitSyncTrigger,
  commitSha: string | null,
): Promise<SyncRunRow> {
  return db.transaction(async (trx) => {
    const run = await insertSyncRun(trx, {
      tenant_id: source.tenant_id,
      source_id: source.id,
      trigger,
      commit_sha: commitSha,
    });
    await emitEvents(trx, [runEvent(run, 'git.sync-run.started')]);
    return run;
  });
}

/** Finishes a run as failed with the error (git's words, redacted), and logs it for an operator. */
export async function finishFailed(
  db: Knex,
  logger: Logger | undefined,
  run: SyncRunRow,
  error: string,
): Promise<void> {
  logger?.warn({ sourceId: run.source_id, runId: run.id, error }, 'git sync run failed');
  await db.transaction(async (trx) => {
    // The source first, as everywhere (see sweepRun in sweep.ts); a deleted source took its runs.
    if (!(await touchGitSource(trx, run.source_id))) return;
    const finished = await finishSyncRun(trx, run.id, {
      status: 'failed',
      changes: [],
      file_errors: [],
      error,
      rollout_id: null,
    });
    await emitEvents(trx, [runEvent(finished, 'git.sync-run.failed', { error })]);
  });
}

/**
 * A branch that cannot be read fails a run. A poll that meets the same failure as the
 * source's last run records nothing more: an unreachable repository does not add a failed
 * run every interval.
 */
export async function recordUnreadable(
  db: Knex,
  logger: Logger | undefined,
  source: GitSourceRow,
  trigger: GitSyncTrigger,
  error: string,
): Promise<void> {
  const last = await latestSyncRun(db, source.id);
  if (trigger === 'poll' && last?.status === 'failed' && last.error === error) return;
  await finishFailed(db, logger, await startRun(db, source, trigger, null), error);
}
