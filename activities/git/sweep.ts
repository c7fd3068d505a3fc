/**
 * The sweep of a run `checkTip` started: fetch the commit, apply its files as versions, start
 * the template's rollouts, and finish the run with what changed. A repository or a tree that
 * cannot be read fails the run with git's words, credentials redacted; it is not an activity
 * failure (retrying would only repeat it, and the next wake-up tries again anyway).
 */
import type { Knex } from 'knex';
import { emitEvents } from '../../db/repos/events';
import { findGitSourceById, markGitSourceSynced, type GitSourceRow } from '../../db/repos/git-sources';
import { findSyncRun, finishSyncRun, type SyncRunFileError, type SyncRunRow } from '../../db/repos/git-sync-runs';
import { whileHeartbeating } from '../keep-alive';
import { createRolloutActivities } from '../rollouts';
import { applyFiles, SourceDeleted, type Applied, type FileAtTip } from './apply';
import type { FetchedCommit } from './repository';
import {
  createTemplateRollouts,
  resumeTemplateRollouts,
  templateOf,
  type TemplateRollout,
  type Transition,
} from './rollouts';
import type { GitSyncDeps } from './sync-shared';
import { finishFailed, runEvent } from './sync-runs';
import { isUnreadable, readBranch } from './tree';

/** `sweep`: a run's commit fetched, applied, and its rollouts handed to the loop. */
export function createGitSweepActivities(deps: GitSyncDeps) {
  const { db } = deps;
  const transitions = createRolloutActivities(db);
  const transition: Transition = (rolloutId, actor) =>
    transitions.transitionRollout({ rolloutId, from: ['pending'], to: 'running', actor });

  return {
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
      return { rollouts: await whileHeartbeating(() => sweepRun(deps, run, source, transition)) };
    },
  };
}

/** One sweep of a running run, from fetch to the finished run; the rollouts it started (or resumed). */
async function sweepRun(
  deps: GitSyncDeps,
  run: SyncRunRow,
  source: GitSourceRow,
  transition: Transition,
): Promise<TemplateRollout[]> {
  const { db } = deps;
  const fetched = await fetchFiles(deps, run, source);
  if (!fetched) return [];
  const { commit, files, misnamed } = fetched;
  let applied: Applied;
  try {
    applied = await applyFiles(db, source, commit, files);
  } catch (error) {
    if (error instanceof SourceDeleted) return []; // its runs went with it; nothing left to record
    throw error;
  }
  const started = await startTemplateRollouts(db, run, source, commit, applied, transition);
  const fileErrors = [...misnamed, ...applied.fileErrors, ...started.fileErrors];
  await finishSucceeded(db, run, source.id, commit, applied, fileErrors, started.rollouts);
  return started.rollouts;
}

/**
 * Fetches the branch's tip into the working copy and reads its configuration files; null when
 * the repository or the tree cannot be read, the run then failed with the reason.
 */
async function fetchFiles(
  deps: GitSyncDeps,
  run: SyncRunRow,
  source: GitSourceRow,
): Promise<{ commit: FetchedCommit; files: FileAtTip[]; misnamed: SyncRunFileError[] } | null> {
  try {
    return await readBranch(deps, source);
  } catch (error) {
    if (!isUnreadable(error)) throw error;
    await finishFailed(deps.db, deps.logger, run, error.message);
    return null;
  }
}

/** The template's rollouts: those an earlier attempt left pending, then one per version this sweep published. */
async function startTemplateRollouts(
  db: Knex,
  run: SyncRunRow,
  source: GitSourceRow,
  commit: FetchedCommit,
  applied: Applied,
  transition: Transition,
): Promise<{ rollouts: TemplateRollout[]; fileErrors: SyncRunFileError[] }> {
  const template = templateOf(source);
  const resumed = await resumeTemplateRollouts(db, run, source, transition);
  const created = template
    ? await createTemplateRollouts(db, run, source, template, commit, applied.changes, transition)
    : { rollouts: [], fileErrors: [] };
  return { rollouts: [...resumed, ...created.rollouts], fileErrors: created.fileErrors };
}

/** Marks the source synced at the commit and finishes the run as succeeded, with its event. */
async function finishSucceeded(
  db: Knex,
  run: SyncRunRow,
  sourceId: string,
  commit: FetchedCommit,
  applied: Applied,
  fileErrors: SyncRunFileError[],
  rollouts: TemplateRollout[],
): Promise<void> {
  await db.transaction(async (trx) => {
    // The source before its run, the order a delete takes them in (the source, then its runs
    // by cascade): the other order could deadlock with a delete. A deleted source took its runs.
    if (!(await markGitSourceSynced(trx, sourceId, commit.sha))) return;
    const finished = await finishSyncRun(trx, run.id, {
      status: 'succeeded',
      commit_sha: commit.sha,
      changes: applied.changes,
      file_errors: fileErrors,
      error: null,
      rollout_id: rollouts[0]?.rolloutId ?? null,
    });
    await emitEvents(trx, [
      runEvent(finished, 'git.sync-run.succeeded', {
        changes: applied.changes,
        fileErrors,
        rolloutIds: rollouts.map((rollout) => rollout.rolloutId),
      }),
    ]);
  });
}
