/**
 * The worker's side of talking to a Git repository: the tip of a branch (ls-remote), and a
 * per-source working copy (a bare repository under Git:WorkDir/<sourceId>) holding the commit
 * a sweep reads. Credentials reach git only through its environment (GIT_CONFIG_* for the
 * HTTPS header, GIT_SSH_COMMAND with a 0600 key file for SSH): never in argv, the remote URL
 * or the working copy's config, and every error message is redacted before it leaves here.
 */
import { chmod, mkdtemp, rm, writeFile, mkdir, access } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import type { GitCredentials } from '../../domain/git/credentials';

/** A git command that failed; the message is already redacted. */
export class GitCommandError extends Error {
  override readonly name = 'GitCommandError';
}

/** A git command that produces no output for this long is stopped (an unresponsive host). */
const SILENT_COMMAND_MS = 60_000;

/** An error stored in a run is git's message, cut here (a misbehaving server could send pages). */
const MAX_ERROR_CHARS = 2_000;

/** The environment variables git may see: only these are passed through to the child. */
const GIT_ENVIRONMENT = [
  'GIT_TERMINAL_PROMPT',
  'GIT_CONFIG_NOSYSTEM',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_COUNT',
  'GIT_CONFIG_KEY_0',
  'GIT_CONFIG_VALUE_0',
  'GIT_SSH_COMMAND',
];

export interface GitAccess {
  url: string;
  credentials: GitCredentials | null;
}

/** Basic auth of an HTTPS token; hosts accept any user name with a token unless told otherwise. */
const basicAuth = (credentials: { username?: string; token: string }) =>
  Buffer.from(`${credentials.username ?? 'git'}:${credentials.token}`).toString('base64');

/** Every string of a credential that could show up in git's output, longest first. */
function secretsOf(credentials: GitCredentials | null): string[] {
  if (!credentials) return [];
  const secrets = credentials.kind === 'https' ? [credentials.token, basicAuth(credentials)] : [credentials.privateKey];
  return secrets.filter((secret) => secret.length > 0).sort((a, b) => b.length - a.length);
}

/** `text` with every credential (and any user:password in a URL) replaced by `***`. */
export function redact(text: string, credentials: GitCredentials | null): string {
  let out = text;
  for (const secret of secretsOf(credentials)) out = out.split(secret).join('***');
  return out.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}

/**
 * Runs `work` with a git client whose environment carries the credentials; an SSH key lives
 * in a private temporary directory for the duration and is deleted after.
 */
async function withGit<T>(access: GitAccess, baseDir: string, work: (git: SimpleGit) => Promise<T>): Promise<T> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: baseDir,
    GIT_TERMINAL_PROMPT: '0', // never wait for a password
    GIT_CONFIG_NOSYSTEM: '1', // no credential helper or rewrite of the host's leaks in
    GIT_CONFIG_GLOBAL: '/dev/null',
  };
  let keyDir: string | undefined;
  const credentials = access.credentials;
  if (credentials?.kind === 'https') {
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basicAuth(credentials)}`;
  } else if (credentials?.kind === 'ssh') {
    keyDir = await mkdtemp(join(tmpdir(), 'fleet-git-ssh-'));
    const key = join(keyDir, 'key');
    const knownHosts = join(keyDir, 'known_hosts');
    await writeFile(
      key,
      credentials.privateKey.endsWith('\n') ? credentials.privateKey : `${credentials.privateKey}\n`,
      {
        mode: 0o600,
      },
    );
    await writeFile(knownHosts, `${credentials.knownHosts.trim()}\n`, { mode: 0o600 });
    await chmod(key, 0o600);
    env.GIT_SSH_COMMAND = `ssh -i ${key} -o IdentitiesOnly=yes -o UserKnownHostsFile=${knownHosts} -o StrictHostKeyChecking=yes -o BatchMode=yes`;
  }
  const git = simpleGit({
    baseDir,
    allowEnvironment: GIT_ENVIRONMENT,
    unsafe: { allowUnsafeConfigEnvCount: true, allowUnsafeSshCommand: true, allowUnsafeConfigPaths: true },
    timeout: { block: SILENT_COMMAND_MS },
  }).env(env);
  try {
    return await work(git);
  } catch (error) {
    throw new GitCommandError(redact(describeFailure(error), credentials));
  } finally {
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  }
}

/** git's own words (its stderr, on one line), without simple-git's framing; long output is cut. */
function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const text = message
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ');
  return (text || 'git failed without a message').slice(0, MAX_ERROR_CHARS);
}

/** The commit at the tip of `branch`, read from the remote (no working copy needed). */
export async function readTip(access: GitAccess, branch: string, scratch: string): Promise<string> {
  await mkdir(scratch, { recursive: true });
  const out = await withGit(access, scratch, (git) =>
    git.listRemote(['--heads', '--', access.url, `refs/heads/${branch}`]),
  );
  const sha = out
    .split('\n')
    .find((line) => line.endsWith(`\trefs/heads/${branch}`))
    ?.split('\t')[0];
  if (!sha) throw new GitCommandError(`branch '${branch}' does not exist in the repository`);
  return sha;
}

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** The commit fetched into the working copy, with what a version's provenance records of it. */
export interface FetchedCommit {
  sha: string;
  author: string;
  message: string;
}

/**
 * Fetches the tip of `branch` into the source's bare working copy (depth 1: only the tree
 * at the tip is needed), creating it when missing and rebuilding it once when it is broken,
 * so any worker can sweep any source. The URL is given on the command line each time, never
 * stored as a remote.
 */
export async function fetchTip(access: GitAccess, branch: string, workingCopy: string): Promise<FetchedCommit> {
  const fetchInto = async () => {
    if (!(await exists(join(workingCopy, 'HEAD')))) {
      await mkdir(workingCopy, { recursive: true });
      await withGit(access, workingCopy, (git) => git.init(true));
    }
    return withGit(access, workingCopy, async (git) => {
      await git.raw(['fetch', '--depth=1', '--no-tags', '--force', access.url, `+refs/heads/${branch}:refs/sync/tip`]);
      const [sha, author, ...message] = (
        await git.raw(['log', '-1', '--format=%H%x00%an%x00%B', 'refs/sync/tip'])
      ).split('\0');
      return { sha: sha!.trim(), author: author ?? '', message: message.join('\0').trim() };
    });
  };
  try {
    return await fetchInto();
  } catch (error) {
    if (!(await exists(workingCopy))) throw error;
    // A working copy left broken (a crash mid-fetch, a full disk): start it afresh once.
    await rm(workingCopy, { recursive: true, force: true });
    return fetchInto();
  }
}

export interface TreeFile {
  path: string;
  object: string;
  size: number;
}

/** The blobs under `path` at `sha` (recursively), with their sizes. */
export async function listFiles(workingCopy: string, sha: string, path: string): Promise<TreeFile[]> {
  const git = simpleGit({ baseDir: workingCopy });
  const args = ['ls-tree', '-r', '-z', '--long', sha];
  if (path) args.push('--', path);
  const out = await git.raw(args).catch((error: unknown) => {
    throw new GitCommandError(describeFailure(error));
  });
  return out
    .split('\0')
    .filter(Boolean)
    .flatMap((entry) => {
      const [meta, file] = entry.split('\t');
      const [, type, object, size] = meta!.trim().split(/\s+/);
      return type === 'blob' ? [{ path: file!, object: object!, size: Number(size) }] : [];
    });
}

/** A blob's content as UTF-8. */
export async function readBlob(workingCopy: string, object: string): Promise<string> {
  // typed as string, but binaryCatFile resolves with the Buffer of the blob
  const content: unknown = await simpleGit({ baseDir: workingCopy }).binaryCatFile(['blob', object]);
  return (content as Buffer).toString('utf8');
}
