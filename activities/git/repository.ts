/**
 * The worker's side of talking to a Git repository: the tip of a branch (ls-remote), and a
 * per-source working copy (a bare repository under Git:WorkDir/<sourceId>) holding the commit
 * a sweep reads. Credentials reach git only through its environment (GIT_CONFIG_* for the
 * HTTPS header, GIT_SSH_COMMAND with a 0600 key file for SSH): never in argv, the remote URL
 * or the working copy's config, and every error message is redacted before it leaves here.
 * Every connection git opens is under the outbound policy (platform/outbound.ts), and a
 * destination that is refused or does not answer fails with one neutral message.
 */
import { chmod, mkdtemp, rm, writeFile, mkdir, access, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import type { GitCredentials } from '../../domain/git/credentials';
import { fileRepositoryProblem, isWithin } from '../../domain/git/source-fields';
import { OUTBOUND_UNREACHABLE, OutboundRefused, type Outbound } from '../../platform/outbound';
import { withOutboundProxy } from '../../platform/outbound-proxy';

/** A git command that failed; the message is already redacted. */
export class GitCommandError extends Error {
  override readonly name = 'GitCommandError';
}

/** A git command that produces no output for this long is stopped (an unresponsive host). */
const SILENT_COMMAND_MS = 60_000;

/** An error stored in a run is git's message, cut here (a misbehaving server could send pages). */
const MAX_ERROR_CHARS = 2_000;

export interface GitAccess {
  url: string;
  credentials: GitCredentials | null;
  /** PEM certificates an https:// source trusts in place of the system's store (its internal CA). */
  caCertificate: string | null;
  /** Where https and ssh connections may go. */
  outbound: Outbound;
  /** Where file:// repositories may be (Git:FileRoots). */
  fileRoots: readonly string[];
}

/** The tenant's words for a repository that is refused or does not answer (the reason is logged). */
export const REPOSITORY_UNREACHABLE = `the repository ${OUTBOUND_UNREACHABLE}`;

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

/** What one git invocation runs with: its environment and configuration (passed as GIT_CONFIG_*, never argv). */
interface Invocation {
  env: Record<string, string>;
  config: Array<[string, string]>;
}

/**
 * git's failures that mean the destination was not reached (no name, no route, a closed
 * port, a timeout, no TLS or SSH server there): curl's `unable to access '…': <reason>`
 * unless the reason is an HTTP status, and ssh's own connection errors. The tenant sees the
 * neutral message for these, whatever the reason.
 */
const UNREACHED = [
  /unable to access '[^']*': (?!The requested URL returned error)(.+)/,
  /(ssh: connect to host .*|ssh: Could not resolve hostname .*|kex_exchange_identification: .*|Connection closed by .* port \d+)/,
];

function unreachedReason(message: string): string | undefined {
  for (const pattern of UNREACHED) {
    const found = pattern.exec(message)?.[1];
    if (found) return found;
  }
  return undefined;
}

/**
 * The file:// repository's path, if it lies under Git:FileRoots, also once symbolic links
 * are followed; else the refusal. A path that does not exist is left to git to report.
 */
async function checkFileRepository(access: GitAccess): Promise<void> {
  const problem = fileRepositoryProblem(access.url, access.fileRoots);
  if (problem) throw new GitCommandError(problem);
  const real = await realpath(new URL(access.url).pathname).catch(() => undefined);
  if (real === undefined) return;
  const roots = await Promise.all(access.fileRoots.map((root) => realpath(root).catch(() => root)));
  if (!roots.some((root) => isWithin(root, real))) {
    throw new GitCommandError(
      'file:// repositories are allowed only under the directories of the setting Git:FileRoots',
    );
  }
}

/**
 * An ssh command that connects only to `address` (checked), still checking the host key
 * under the name ssh would have looked up (`[host]:port` off port 22, as ssh-keyscan -p
 * writes it). `host` is a plain name or address (repoUrlProblem), so quoting it is enough.
 */
function sshCommand(
  host: string,
  port: string,
  address: string,
  credentials: { key: string; knownHosts: string } | undefined,
) {
  const alias = port && port !== '22' ? `[${host}]:${port}` : host;
  const options = [
    '-F /dev/null', // no configuration file: no ProxyCommand, no other host
    '-o BatchMode=yes',
    `-o HostName=${address}`,
    `-o 'HostKeyAlias=${alias}'`,
    '-o CheckHostIP=no',
  ];
  if (credentials) {
    options.push(
      `-i ${credentials.key}`,
      '-o IdentitiesOnly=yes',
      `-o UserKnownHostsFile=${credentials.knownHosts}`,
      '-o StrictHostKeyChecking=yes',
    );
  }
  return `ssh ${options.join(' ')}`;
}

/**
 * Runs `work` with a git client whose environment carries the credentials, under the
 * outbound policy: https through a proxy of its own that connects only to checked addresses,
 * ssh pinned to a checked address, file:// only under Git:FileRoots, and no other protocol
 * (GIT_ALLOW_PROTOCOL). An SSH key, and an https:// source's own CA bundle, live in a private
 * temporary directory for the duration.
 */
async function withGit<T>(access: GitAccess, baseDir: string, work: (git: SimpleGit) => Promise<T>): Promise<T> {
  const url = new URL(access.url);
  const invocation: Invocation = {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: baseDir,
      GIT_TERMINAL_PROMPT: '0', // never wait for a password
      GIT_CONFIG_NOSYSTEM: '1', // no credential helper or rewrite of the host's leaks in
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ALLOW_PROTOCOL: url.protocol.slice(0, -1),
    },
    config: [],
  };
  const credentials = access.credentials;
  if (credentials?.kind === 'https') {
    invocation.config.push(['http.extraHeader', `Authorization: Basic ${basicAuth(credentials)}`]);
  }
  let keyDir: string | undefined;
  const privateDir = async () => (keyDir ??= await mkdtemp(join(tmpdir(), 'fleet-git-access-')));
  try {
    if (url.protocol === 'https:' && access.caCertificate) {
      const caFile = join(await privateDir(), 'ca.pem');
      await writeFile(caFile, access.caCertificate, { mode: 0o600 });
      invocation.config.push(['http.sslCAInfo', caFile]);
    }
    if (url.protocol === 'file:') {
      await checkFileRepository(access);
      return await runGit(invocation, baseDir, credentials, work);
    }
    if (url.protocol === 'ssh:') {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const [address] = await access.outbound.resolve(host);
      let files: { key: string; knownHosts: string } | undefined;
      if (credentials?.kind === 'ssh') {
        const dir = await privateDir();
        files = { key: join(dir, 'key'), knownHosts: join(dir, 'known_hosts') };
        const key = credentials.privateKey;
        await writeFile(files.key, key.endsWith('\n') ? key : `${key}\n`, { mode: 0o600 });
        await writeFile(files.knownHosts, `${credentials.knownHosts.trim()}\n`, { mode: 0o600 });
        await chmod(files.key, 0o600);
      }
      invocation.env.GIT_SSH_COMMAND = sshCommand(host, url.port, address!.address, files);
      return await runGit(invocation, baseDir, credentials, work, (reason) =>
        access.outbound.unreachable(`ssh://${url.host}`, reason),
      );
    }
    return await withOutboundProxy(access.outbound, (proxy) => {
      invocation.config.push(['http.proxy', proxy.url], ['http.proxyAuthMethod', 'basic']);
      return runGit(
        invocation,
        baseDir,
        credentials,
        work,
        (reason) => proxy.failure() ?? access.outbound.unreachable(url.origin, reason),
      );
    });
  } catch (error) {
    if (error instanceof OutboundRefused) throw new GitCommandError(REPOSITORY_UNREACHABLE);
    throw error;
  } finally {
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  }
}

/**
 * Runs `work` with git set up by `invocation`. A failure becomes a GitCommandError with
 * git's words, redacted; one that means the destination was not reached becomes
 * `unreached(reason)` (the caller logs and neutralises it).
 */
async function runGit<T>(
  invocation: Invocation,
  baseDir: string,
  credentials: GitCredentials | null,
  work: (git: SimpleGit) => Promise<T>,
  unreached?: (reason: string) => OutboundRefused,
): Promise<T> {
  const env: Record<string, string> = { ...invocation.env, GIT_CONFIG_COUNT: String(invocation.config.length) };
  invocation.config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  const git = simpleGit({
    baseDir,
    allowEnvironment: Object.keys(env),
    unsafe: { allowUnsafeConfigEnvCount: true, allowUnsafeSshCommand: true, allowUnsafeConfigPaths: true },
    timeout: { block: SILENT_COMMAND_MS },
  }).env(env);
  try {
    return await work(git);
  } catch (error) {
    const message = redact(describeFailure(error), credentials);
    const refusal = refusalOf(message, credentials);
    if (refusal) throw new GitCommandError(refusal);
    const reason = unreached && unreachedReason(message);
    if (reason) throw unreached(reason);
    throw new GitCommandError(message);
  }
}

/**
 * A server that answered and refused, in words an operator acts on rather than git's: the
 * credentials refused (on a 401 git asks for a user name, which GIT_TERMINAL_PROMPT=0 turns
 * into "could not read Username … terminal prompts disabled"), access denied (403), an SSH
 * key refused, a TLS certificate not trusted (a server reached through the outbound policy:
 * saying so tells nothing the policy did not allow).
 */
function refusalOf(message: string, credentials: GitCredentials | null): string | undefined {
  if (/could not read (Username|Password)|Authentication failed|returned error: 401/.test(message)) {
    return credentials
      ? 'the repository refused the credentials (HTTP 401): check the token (and the username, for hosts that want one)'
      : 'the repository asks for credentials (HTTP 401); the source has none';
  }
  if (/returned error: 403/.test(message))
    return 'the repository refused access (HTTP 403): the credentials do not allow reading it';
  if (/Permission denied \(publickey/.test(message)) return 'the repository refused the SSH key (Permission denied)';
  const untrusted = /unable to access '[^']*': ([^']*certificate[^']*)/i.exec(message)?.[1];
  if (untrusted) {
    return (
      `the repository's TLS certificate is not trusted (${untrusted.trim()}); if an internal CA issued it, ` +
      "give the source that CA's certificate as caCertificate"
    );
  }
  return undefined;
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
  /** A symbolic link: its blob is the link's text (mode 120000). */
  link: boolean;
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
      const [mode, type, object, size] = meta!.trim().split(/\s+/);
      return type === 'blob' ? [{ path: file!, object: object!, size: Number(size), link: mode === '120000' }] : [];
    });
}

/** A blob's content as UTF-8. */
export async function readBlob(workingCopy: string, object: string): Promise<string> {
  // typed as string, but binaryCatFile resolves with the Buffer of the blob
  const content: unknown = await simpleGit({ baseDir: workingCopy }).binaryCatFile(['blob', object]);
  return (content as Buffer).toString('utf8');
}
