/**
 * The git-sync workflow's hands. `checkTip` reads the branch's tip and decides in one step
 * whether a run is due (a poll at the same tip costs one activity and writes nothing);
 * when it is, the run is recorded at once (`running`), so it is visible while `sweep` fetches
 * the commit and applies its files. A repository that cannot be read fails the run with
 * git's words, credentials redacted; it is not an activity failure (retrying would only
 * repeat it, and the next wake-up tries again anyway).
 *
 * One file per concern, under `git/`: the source's state and its tip (`tip.ts`), the sweep
 * (`sweep.ts`) with the commit's files (`tree.ts`), their application as versions (`apply.ts`)
 * and the template's rollouts (`rollouts.ts`),
 * the working copies' removal (`working-copies.ts`), the run's records and events (`sync-runs.ts`),
 * the repository through the `git` binary (`repository.ts`); `sync-shared.ts` holds what they share.
 */
import { createGitSweepActivities } from './git/sweep';
import type { GitSyncDeps } from './git/sync-shared';
import { createGitTipActivities } from './git/tip';
import { createWorkingCopyActivities } from './git/working-copies';

export type { GitSyncDeps } from './git/sync-shared';
export type { GitSourceState, StartedRun } from './git/tip';

/** Every activity the git-sync workflow calls by name, built from the same dependencies. */
export function createGitSyncActivities(deps: GitSyncDeps) {
  return {
    ...createGitTipActivities(deps),
    ...createGitSweepActivities(deps),
    ...createWorkingCopyActivities(deps),
  };
}
