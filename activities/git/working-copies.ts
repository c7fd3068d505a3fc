/**
 * Working copies outlive nothing: a source's is removed when its loop ends (the source was
 * deleted), by whichever worker runs that activity, and every worker removes, as it starts
 * and every hour after, those of sources that no longer exist (a deletion seen by another
 * worker, a worker that was down). Only directories named like a source's id are touched.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { existingGitSourceIds } from '../../db/repos/git-sources';
import { workingCopy, type GitSyncDeps } from './sync-shared';

const SOURCE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `removeWorkingCopy`: the loop of a deleted source, as it ends. */
export function createWorkingCopyActivities(deps: Pick<GitSyncDeps, 'settings'>) {
  return {
    async removeWorkingCopy(sourceId: string): Promise<void> {
      if (!SOURCE_ID.test(sourceId)) return;
      await rm(workingCopy(deps.settings, sourceId), { recursive: true, force: true });
    },
  };
}

/** Removes the working copies under `workDir` whose source no longer exists; answers how many. */
export async function removeStaleWorkingCopies(db: Knex, workDir: string): Promise<number> {
  const names = await readdir(workDir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  const candidates = names.filter((name) => SOURCE_ID.test(name));
  if (candidates.length === 0) return 0;
  const existing = await existingGitSourceIds(db, candidates);
  const stale = candidates.filter((id) => !existing.has(id));
  for (const id of stale) await rm(join(workDir, id), { recursive: true, force: true });
  return stale.length;
}
