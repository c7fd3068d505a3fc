/**
 * The loop's look at its source: its state at a wake-up, and the branch's tip. `checkTip`
 * decides in one step whether a run is due (a poll at the same tip costs one activity and
 * writes nothing); when it is, the run is recorded at once (`running`).
 */
import { findGitSourceById, type GitSourceRow } from '../../db/repos/git-sources';
import { latestSyncRun } from '../../db/repos/git-sync-runs';
import type { GitSyncTrigger } from '../../domain/git/sync-trigger';
import { GitCommandError, readTip } from './repository';
import { accessOf, type GitSyncDeps } from './sync-shared';
import { recordUnreadable, startRun } from './sync-runs';
import { isUnreadable, readBranch } from './tree';

/** What the loop needs of its source at a wake-up. */
export interface GitSourceState {
  paused: boolean;
  pollIntervalSeconds: number;
  /** For the Temporal UI (absent from results recorded before it). */
  name?: string;
  branch?: string;
}

export interface StartedRun {
  runId: string;
  commitSha: string;
}

/** `loadGitSource` and `checkTip`: whether the loop goes on, and whether a run is due. */
export function createGitTipActivities(deps: GitSyncDeps) {
  const { db, settings, logger } = deps;
  return {
    /** The source's state, or null once it is deleted (the loop then ends). */
    async loadGitSource(sourceId: string): Promise<GitSourceState | null> {
      const source = await findGitSourceById(db, sourceId);
      if (!source) return null;
      const { paused, poll_interval_seconds: pollIntervalSeconds, name, branch } = source;
      return { paused, pollIntervalSeconds, name, branch };
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
        tip = await readTip(accessOf(deps, source), source.branch, settings.git.workDir);
      } catch (error) {
        if (!(error instanceof GitCommandError)) throw error;
        await recordUnreadable(db, logger, source, input.trigger, error.message);
        return null;
      }
      if (!input.force && tip === source.last_synced_sha) return null;
      if (input.trigger === 'poll' && (await failsAsBefore(deps, source, tip))) return null;
      const run = await startRun(db, source, input.trigger, tip);
      return { runId: run.id, commitSha: tip };
    },
  };
}

/**
 * A poll at a tip whose last run failed: true when reading it fails again in the same words,
 * and nothing is recorded. A failure retrying cannot change (1,001 files, a fetch the server
 * refuses) adds one failed run for the tip, not one per poll, as an unreadable branch does;
 * a failure that went away makes a run.
 */
async function failsAsBefore(deps: GitSyncDeps, source: GitSourceRow, tip: string): Promise<boolean> {
  const last = await latestSyncRun(deps.db, source.id);
  if (last?.status !== 'failed' || last.commit_sha !== tip) return false;
  try {
    await readBranch(deps, source);
    return false;
  } catch (error) {
    if (!isUnreadable(error)) throw error;
    return error.message === last.error;
  }
}
