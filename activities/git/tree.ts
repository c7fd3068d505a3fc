/**
 * The configuration files of a fetched commit, read from the source's working copy: which
 * paths under the source's folder are configurations, which are misnamed, and their content.
 */
import type { GitSourceRow } from '../../db/repos/git-sources';
import type { SyncRunFileError } from '../../db/repos/git-sync-runs';
import { CONTENT_LIMIT_BYTES } from '../../domain/configurations/content';
import { MAX_SOURCE_FILES, normalizeSourcePath, sourceFileOf, type SourceFile } from '../../domain/git/files';
import type { FileAtTip } from './apply';
import { listFiles, readBlob, type FetchedCommit } from './repository';

/** A tree that cannot be a set of configurations: the run fails, whatever the retry. */
export class UnusableTree extends Error {}

/**
 * The configuration files at the commit, read from the working copy `dir` (files over 1 MiB
 * are not read), and the files whose names cannot be a configuration's (`misnamed`: errors
 * of the run, the other files still apply).
 */
export async function filesAt(
  dir: string,
  source: GitSourceRow,
  commit: FetchedCommit,
): Promise<{ files: FileAtTip[]; misnamed: SyncRunFileError[] }> {
  const mapped = (await listFiles(dir, commit.sha, normalizeSourcePath(source.path))).flatMap((file) => {
    const found = sourceFileOf(source.path, file.path);
    return found ? [{ ...file, ...found }] : [];
  });
  if (mapped.length > MAX_SOURCE_FILES)
    throw new UnusableTree(
      `${mapped.length} configuration files under '${source.path || '/'}'; a source holds at most ${MAX_SOURCE_FILES}`,
    );
  const files: FileAtTip[] = [];
  const misnamed: SyncRunFileError[] = [];
  for (const file of mapped) {
    if ('error' in file) misnamed.push({ path: file.path, error: file.error });
    else files.push({ ...(file as SourceFile), size: file.size, content: await readIfSmall(dir, file) });
  }
  return { files, misnamed };
}

/** The blob's content, or undefined when it is over the size limit (it is then not read at all). */
function readIfSmall(dir: string, file: { object: string; size: number }): Promise<string> | undefined {
  return file.size > CONTENT_LIMIT_BYTES ? undefined : readBlob(dir, file.object);
}
