/**
 * The configuration files of a fetched commit, read from the source's working copy: which
 * paths under the source's folder are configurations, which are misnamed, and their content.
 * A symbolic link is followed to the file it names when that file is the source's own; two
 * files that would be one configuration are both errors.
 */
import type { GitSourceRow } from '../../db/repos/git-sources';
import type { SyncRunFileError } from '../../db/repos/git-sync-runs';
import { CONTENT_LIMIT_BYTES } from '../../domain/configurations/content';
import {
  collidingNames,
  linkTarget,
  MAX_LINK_HOPS,
  MAX_SOURCE_FILES,
  normalizeSourcePath,
  sourceFileOf,
  type SourceFile,
} from '../../domain/git/files';
import type { FileAtTip } from './apply';
import { fetchTip, GitCommandError, listFiles, readBlob, type FetchedCommit, type TreeFile } from './repository';
import { accessOf, workingCopy, type GitSyncDeps } from './sync-shared';

/** A tree that cannot be a set of configurations: the run fails, whatever the retry. */
export class UnusableTree extends Error {}

/** A failure to read the branch (git's words, or a tree that is no set of configurations): the run's error. */
export const isUnreadable = (error: unknown): error is GitCommandError | UnusableTree =>
  error instanceof GitCommandError || error instanceof UnusableTree;

/**
 * Fetches the branch's tip into the source's working copy and reads its configuration files.
 * Throws what `isUnreadable` knows when the repository or the tree cannot be read.
 */
export async function readBranch(
  deps: Pick<GitSyncDeps, 'settings' | 'outbound'>,
  source: GitSourceRow,
): Promise<{ commit: FetchedCommit; files: FileAtTip[]; misnamed: SyncRunFileError[] }> {
  const dir = workingCopy(deps.settings, source.id);
  const commit = await fetchTip(accessOf(deps, source), source.branch, dir);
  return { commit, ...(await filesAt(dir, source, commit)) };
}

/**
 * The configuration files at the commit, read from the working copy `dir` (files over 1 MiB
 * are not read), and the files whose names cannot be a configuration's (`misnamed`: errors
 * of the run, the other files still apply). A file that cannot be read as a configuration
 * (a link leaving the source, a name another file has too) is in `files` with `refused`:
 * its configuration, if it has one, stays as it is.
 */
export async function filesAt(
  dir: string,
  source: GitSourceRow,
  commit: FetchedCommit,
): Promise<{ files: FileAtTip[]; misnamed: SyncRunFileError[] }> {
  const tree = await listFiles(dir, commit.sha, normalizeSourcePath(source.path));
  const mapped = tree.flatMap((file) => {
    const found = sourceFileOf(source.path, file.path);
    return found ? [{ ...file, ...found }] : [];
  });
  if (mapped.length > MAX_SOURCE_FILES)
    throw new UnusableTree(
      `${mapped.length} configuration files under '${source.path || '/'}'; a source holds at most ${MAX_SOURCE_FILES}`,
    );
  const misnamed: SyncRunFileError[] = [];
  const named: Array<SourceFile & TreeFile> = [];
  for (const file of mapped) {
    if ('error' in file) misnamed.push({ path: file.path, error: file.error });
    else named.push(file);
  }
  const collisions = collidingNames(named);
  const byPath = new Map(tree.map((file) => [file.path, file]));
  const files: FileAtTip[] = [];
  for (const file of named) {
    const { path, name, format } = file;
    const colliding = collisions.get(path);
    const blob = colliding ? { error: colliding } : await followLinks(dir, source, file, byPath);
    if ('error' in blob) files.push({ path, name, format, size: file.size, refused: blob.error });
    else files.push({ path, name, format, size: blob.size, content: await readIfSmall(dir, blob) });
  }
  return { files, misnamed };
}

/** The longest link text followed (Linux's PATH_MAX): a blob that claims to be a longer link is not read. */
const PATH_MAX = 4096;

/**
 * The regular file a tree entry stands for: itself, or the file its symbolic link (or chain
 * of links) names inside the source's path; else the link's error.
 */
async function followLinks(
  dir: string,
  source: GitSourceRow,
  file: TreeFile,
  byPath: Map<string, TreeFile>,
): Promise<TreeFile | { error: string }> {
  let at = file;
  for (let hops = 0; at.link; hops++) {
    if (hops === MAX_LINK_HOPS) return { error: `more than ${MAX_LINK_HOPS} symbolic links in a row` };
    if (at.size > PATH_MAX) return { error: `a symbolic link of ${at.size} bytes, longer than any path` };
    const text = await readBlob(dir, at.object);
    const target = linkTarget(source.path, at.path, text);
    if (typeof target !== 'string') return target;
    const next = byPath.get(target);
    if (!next) return { error: `a symbolic link to '${text}', which is not a file of the commit` };
    at = next;
  }
  return at;
}

/** The blob's content, or undefined when it is over the size limit (it is then not read at all). */
function readIfSmall(dir: string, file: { object: string; size: number }): Promise<string> | undefined {
  return file.size > CONTENT_LIMIT_BYTES ? undefined : readBlob(dir, file.object);
}
