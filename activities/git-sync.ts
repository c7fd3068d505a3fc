/**
 * The git-sync workflow's hands. `checkTip` reads the branch's tip and decides in one step
 * whether a run is due (a poll at the same tip costs one activity and writes nothing);
 * when it is, the run is recorded at once (`running`), so it is visible while `sweep` fetches
 * the commit and applies its files. A repository that cannot be read fails the run with
 * git's words, credentials redacted; it is not an activity failure (retrying would only
 * repeat it, and the next wake-up tries again anyway).
 */
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { emitEvents, type EventType } from '../db/repos/events';
import { findGitSourceById, markGitSourceSynced, touchGitSource, type GitSourceRow } from '../db/repos/git-sources';
import { findSyncRun, finishSyncRun, insertSyncRun, latestSyncRun, type SyncRunRow } from '../db/repos/git-sync-runs';
import { CONTENT_LIMIT_BYTES } from '../domain/configurations/content';
import { openCredentials } from '../domain/git/credentials';
import { MAX_SOURCE_FILES, normalizeSourcePath, sourceFileOf, type SourceFile } from '../domain/git/files';
import { encryptionKey } from '../platform/secrets';
import type { Outbound } from '../platform/outbound';
import type { Settings } from '../platform/settings';
import { applyFiles, SourceDeleted, type Applied, type FileAtTip } from './git/apply';
import {
  fetchTip,
  GitCommandError,
  listFiles,
  readBlob,
  readTip,
  type FetchedCommit,
  type GitAccess,
} from './git/repository';
import { createTemplateRollouts, resumeTemplateRollouts, templateOf, type TemplateRollout } from './git/rollouts';
import { whileHeartbeating } from './keep-alive';
import { createRolloutActivities } from './rollouts';
import type { GitSyncTrigger } from '../domain/git/sync-trigger';

export interface GitSyncDeps {
  db: Knex;
  settings: Pick<Settings, 'git' | 'encryptionKey' | 'isDevelopment'>;
  /** Where repositories may be reached (the policy of Outbound:*). */
  outbound: Outbound;
  logger?: Logger;
}

/** What the loop needs of its source at a wake-up. */
export interface GitSourceState {
  paused: boolean;
  pollIntervalSeconds: number;
}

export interface StartedRun {
  runId: string;
  commitSha: string;
}

/** A tree that cannot be a set of configurations: the run fails, whatever the retry. */
class UnusableTree extends Error {}

export function createGitSyncActivities({ db, settings, outbound, logger }: GitSyncDeps) {
  const transitions = createRolloutActivities(db);
  const workingCopy = (sourceId: string) => join(settings.git.workDir, sourceId);

  function accessOf(source: GitSourceRow): GitAccess {
    return {
      url: source.repo_url,
      credentials: openCredentials(encryptionKey(settings), source),
      outbound,
      fileRoots: settings.git.fileRoots,
    };
  }

  const runEvent = (run: SyncRunRow, type: EventType, data: Record<string, unknown> = {}) => ({
    tenantId: run.tenant_id,
    type,
    source: `/api/git-sources/${run.source_id}`,
    subject: run.source_id,
    data: { runId: run.id, sourceId: run.source_id, trigger: run.trigger, commitSha: run.commit_sha, ...data },
  });

  async function finishFailed(run: SyncRunRow, error: string): Promise<void> {
    logger?.warn({ sourceId: run.source_id, runId: run.id, error }, 'git sync run failed');
    await db.transaction(async (trx) => {
      // The source first, as everywhere (see sweepRun); a deleted source took its runs.
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

  async function startRun(source: GitSourceRow, trigger: GitSyncTrigger, commitSha: string | null) {
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

  /**
   * A branch that cannot be read fails a run. A poll that meets the same failure as the
   * source's last run records nothing more: an unreachable repository does not add a failed
   * run every interval.
   */
  async function recordUnreadable(source: GitSourceRow, trigger: GitSyncTrigger, error: string): Promise<void> {
    const last = await latestSyncRun(db, source.id);
    if (trigger === 'poll' && last?.status === 'failed' && last.error === error) return;
    await finishFailed(await startRun(source, trigger, null), error);
  }

  /** The configuration files at the commit, read from the working copy (files over 1 MiB are not read). */
  async function filesAt(source: GitSourceRow, commit: FetchedCommit) {
    const dir = workingCopy(source.id);
    const mapped = (await listFiles(dir, commit.sha, normalizeSourcePath(source.path))).flatMap((file) => {
      const found = sourceFileOf(source.path, file.path);
      return found ? [{ ...file, ...found }] : [];
    });
    if (mapped.length > MAX_SOURCE_FILES)
      throw new UnusableTree(
        `${mapped.length} configuration files under '${source.path || '/'}'; a source holds at most ${MAX_SOURCE_FILES}`,
      );
    const files: FileAtTip[] = [];
    const misnamed: Array<{ path: string; error: string }> = [];
    for (const file of mapped) {
      if ('error' in file) misnamed.push({ path: file.path, error: file.error });
      else files.push({ ...(file as SourceFile), size: file.size, content: await readIfSmall(dir, file) });
    }
    return { files, misnamed };
  }

  const readIfSmall = (dir: string, file: { object: string; size: number }) =>
    file.size > CONTENT_LIMIT_BYTES ? undefined : readBlob(dir, file.object);

  const transition = (rolloutId: string, actor: string) =>
    transitions.transitionRollout({ rolloutId, from: ['pending'], to: 'running', actor });

  async function sweepRun(run: SyncRunRow, source: GitSourceRow): Promise<TemplateRollout[]> {
    let commit: FetchedCommit;
    let files: FileAtTip[];
    let misnamed: Array<{ path: string; error: string }>;
    try {
      commit = await fetchTip(accessOf(source), source.branch, workingCopy(source.id));
      ({ files, misnamed } = await filesAt(source, commit));
    } catch (error) {
      if (!(error instanceof GitCommandError || error instanceof UnusableTree)) throw error;
      await finishFailed(run, error.message);
      return [];
    }
    let applied: Applied;
    try {
      applied = await applyFiles(db, source, commit, files);
    } catch (error) {
      if (error instanceof SourceDeleted) return []; // its runs went with it; nothing left to record
      throw error;
    }
    const template = templateOf(source);
    const resumed = await resumeTemplateRollouts(db, run, source, transition);
    const created = template
      ? await createTemplateRollouts(db, run, source, template, commit, applied.changes, transition)
      : { rollouts: [], fileErrors: [] };
    const started = { rollouts: [...resumed, ...created.rollouts], fileErrors: created.fileErrors };
    const fileErrors = [...misnamed, ...applied.fileErrors, ...started.fileErrors];
    await db.transaction(async (trx) => {
      // The source before its run, the order a delete takes them in (the source, then its runs
      // by cascade): the other order could deadlock with a delete. A deleted source took its runs.
      if (!(await markGitSourceSynced(trx, source.id, commit.sha))) return;
      const finished = await finishSyncRun(trx, run.id, {
        status: 'succeeded',
        commit_sha: commit.sha,
        changes: applied.changes,
        file_errors: fileErrors,
        error: null,
        rollout_id: started.rollouts[0]?.rolloutId ?? null,
      });
      await emitEvents(trx, [
        runEvent(finished, 'git.sync-run.succeeded', {
          changes: applied.changes,
          fileErrors,
          rolloutIds: started.rollouts.map((rollout) => rollout.rolloutId),
        }),
      ]);
    });
    return started.rollouts;
  }

  return {
    /** The source's state, or null once it is deleted (the loop then ends). */
    async loadGitSource(sourceId: string): Promise<GitSourceState | null> {
      const source = await findGitSourceById(db, sourceId);
      return source ? { paused: source.paused, pollIntervalSeconds: source.poll_interval_seconds } : null;
    },

    /**
     * Reads the tip and starts a run when it differs from the last synced commit (`force`:
     * always, a forced sweep). Null: nothing to do (same tip, paused, deleted, or unreadable,
     * which is recorded as a failed run).
     */
    async checkTip(input: { sourceId: string; trigger: GitSyncTrigger; force: boolean }): Promise<StartedRun | null> {
      const source = await findGitSourceById(db, input.sourceId);
      if (!source || source.paused) return null;
      let tip: string;
      try {
        tip = await readTip(accessOf(source), source.branch, settings.git.workDir);
      } catch (error) {
        if (!(error instanceof GitCommandError)) throw error;
        await recordUnreadable(source, input.trigger, error.message);
        return null;
      }
      if (!input.force && tip === source.last_synced_sha) return null;
      const run = await startRun(source, input.trigger, tip);
      return { runId: run.id, commitSha: tip };
    },

    /**
     * Fetches the commit and applies its files for a run `checkTip` started, and returns the
     * rollouts whose workflows the loop starts. A retry after a worker died mid-sweep returns
     * the rollouts the dead attempt created too (the run lists them); a retry of a run already
     * finished applies nothing more and returns only those.
     */
    async sweep(input: { runId: string }): Promise<{ rollouts: TemplateRollout[] }> {
      const run = await findSyncRun(db, input.runId);
      if (!run || run.status === 'failed') return { rollouts: [] };
      const source = await findGitSourceById(db, run.source_id);
      if (!source) return { rollouts: [] }; // deleted meanwhile (its runs went with it)
      if (run.status === 'succeeded') {
        // An attempt finished the run but its answer was lost: its rollouts still need their workflows.
        return { rollouts: await resumeTemplateRollouts(db, run, source, transition) };
      }
      return { rollouts: await whileHeartbeating(() => sweepRun(run, source)) };
    },
  };
}
