/**
 * What a Git source's repository URL, branch, path and CA bundle may be. Each check returns why a
 * value is refused (undefined: accepted), in words an operator can act on; the api turns
 * them into 400s. The values end up as arguments of `git`, so anything git could read as
 * an option, another transport or an escape is refused here rather than quoted later.
 */
import { X509Certificate } from 'node:crypto';

/** Schemes a source may use: `ext::`, `fd::`, `git://` (unauthenticated) and scp-like `host:path` are not. */
export const REPO_URL_SCHEMES = ['https:', 'ssh:', 'file:'] as const;
export type RepoUrlScheme = (typeof REPO_URL_SCHEMES)[number];

/** Whitespace and control characters: the URL parser would silently drop some of them. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BLANK_OR_CONTROL = /[\s\u0000-\u001f\u007f-\u009f]/;

export function repoUrlProblem(value: string): string | undefined {
  if (BLANK_OR_CONTROL.test(value)) return 'must not contain spaces or control characters';
  if (!URL.canParse(value)) return 'must be an absolute URL: https://, ssh:// or file://';
  // The URL parser forgives what git reads differently: `https:\\host` and `https:///host`
  // both become https://host/. Only the plain spelling is taken.
  if (value.includes('\\')) return 'must not contain \\ (write / in URLs)';
  const url = new URL(value);
  if (!(REPO_URL_SCHEMES as readonly string[]).includes(url.protocol)) {
    return `scheme ${url.protocol} is not accepted: use https://, ssh:// or file:// (write scp-like host:path as ssh://user@host/path)`;
  }
  if (url.password) {
    return 'must not embed a password or token: give it in `credentials` (stored encrypted, never shown)';
  }
  if (url.protocol === 'https:' && url.username) {
    return 'must not embed a user name: give it as `credentials.username`';
  }
  if (url.search || url.hash || value.includes('?') || value.includes('#')) {
    return 'must not have a query string or fragment';
  }
  if (url.protocol === 'file:') {
    if (url.host || !/^file:\/\/\//i.test(value))
      return 'file:// URLs name a path on the worker: file:///srv/git/repo.git (no host)';
    if (url.pathname === '/' || url.pathname === '') return 'file:// URLs need a repository path';
    if (value.includes('%')) return 'file:// URLs must name the path as it is (no %-escapes)';
    return undefined;
  }
  if (!url.hostname || !/^[a-z]+:\/\/[^/]/i.test(value)) return `needs a host: ${url.protocol}//host/path`;
  return url.protocol === 'ssh:' ? sshUrlProblem(url) : undefined;
}

/** A host name (letters, digits, dots, hyphens, underscores) or a bracketed IPv6 literal. */
const SSH_HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])$/;
const SSH_USER = /^[A-Za-z0-9._][A-Za-z0-9._-]*$/;

/**
 * git hands an ssh:// URL's user and host to ssh as one argument (`user@host`): one that
 * begins with `-` is read as an option (`ssh://-oProxyCommand=…` runs a command). Only
 * plain names are taken, so nothing git passes on can be an option or an escape.
 */
function sshUrlProblem(url: URL): string | undefined {
  if (!SSH_HOST.test(url.hostname)) {
    return 'the host must be a plain host name or IP address (letters, digits, . and -, not starting with -)';
  }
  if (url.username && !SSH_USER.test(url.username)) {
    return 'the user name must be plain (letters, digits, . _ and -, not starting with -)';
  }
  return undefined;
}

/**
 * A file:// repository is a directory on the worker's own disk, so it is refused unless
 * the deployment names where such repositories may be (Git:FileRoots): otherwise any tenant
 * could import whatever repository the host holds. `roots` are absolute directories.
 */
export function fileRepositoryProblem(repoUrl: string, roots: readonly string[]): string | undefined {
  if (schemeOf(repoUrl) !== 'file:') return undefined;
  if (roots.length === 0) return 'file:// repositories are not allowed on this installation (setting Git:FileRoots)';
  const path = new URL(repoUrl).pathname;
  if (!roots.some((root) => isWithin(root, path))) {
    return 'file:// repositories are allowed only under the directories of the setting Git:FileRoots';
  }
  return undefined;
}

/** `path` is `root` or below it (both absolute and normalised). */
export const isWithin = (root: string, path: string): boolean =>
  path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);

export const schemeOf = (repoUrl: string): RepoUrlScheme => new URL(repoUrl).protocol as RepoUrlScheme;

/**
 * Where credentials for `repoUrl` are sent: scheme, host and port. Kept credentials must not
 * follow a URL to another origin (they are write-only: nobody could read them to send them
 * elsewhere, and changing the URL must not either).
 */
export const originOf = (repoUrl: string): string => {
  const url = new URL(repoUrl);
  return `${url.protocol}//${url.host}`;
};

/** The branch name rules of `git check-ref-format --branch` (for `refs/heads/<name>`). */
export function branchProblem(name: string): string | undefined {
  if (name === '' || name.length > 255) return 'must be 1-255 characters';
  if (name.startsWith('refs/')) return 'give the branch name (main), not the ref (refs/heads/main)';
  if (name.startsWith('-')) return 'must not start with -';
  if (name === '@' || name === 'HEAD') return `must not be ${name} (git reads it as the current commit)`;
  if (BLANK_OR_CONTROL.test(name)) return 'must not contain spaces or control characters';
  if (/[~^:?*[\\]/.test(name)) return 'must not contain ~ ^ : ? * [ or \\';
  if (name.includes('..')) return 'must not contain ..';
  if (name.includes('@{')) return 'must not contain @{';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//'))
    return 'must not start or end with / or contain //';
  if (name.endsWith('.')) return 'must not end with .';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'no part between slashes may start with .';
    if (part.endsWith('.lock')) return 'no part between slashes may end with .lock';
  }
  return undefined;
}

/** `path`: a directory of the tree, relative to its root ('' is the root), written with `/`. */
export function treePathProblem(path: string): string | undefined {
  if (path === '') return undefined;
  if (path.length > 1024) return 'must be at most 1024 characters';
  if (BLANK_OR_CONTROL.test(path.replace(/ /g, ''))) return 'must not contain control characters or tabs';
  if (path.startsWith('/')) return "must be relative to the repository's root (no leading /)";
  if (path.includes('\\')) return 'separates directories with /, not \\';
  const parts = path.replace(/\/$/, '').split('/');
  if (parts.some((part) => part === '..')) return 'must not contain .. (it stays inside the repository)';
  if (parts.some((part) => part === '.' || part === '')) return 'must not contain . or empty parts (//)';
  return undefined;
}

/** The path as stored: without a trailing `/`. */
export const normalTreePath = (path: string) => path.replace(/\/$/, '');

/** Why `credentials` of `kind` cannot serve `repoUrl` (undefined: they can). */
export function credentialsMismatch(repoUrl: string, kind: 'https' | 'ssh' | null): string | undefined {
  if (kind === null) return undefined;
  const scheme = schemeOf(repoUrl);
  if (scheme === 'file:') return 'a file:// repository takes no credentials';
  if (scheme === 'https:' && kind !== 'https') return 'an https:// repository takes credentials of kind https';
  if (scheme === 'ssh:' && kind !== 'ssh') return 'an ssh:// repository takes credentials of kind ssh';
  return undefined;
}

/** A CA bundle holds at most this many certificates, in at most this many bytes. */
export const CA_BUNDLE_MAX_CERTIFICATES = 32;
export const CA_BUNDLE_MAX_BYTES = 65_536;

/** The PEM blocks of certificates in a bundle, and the text between them (which must be blank). */
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END CERTIFICATE-----/g;

/**
 * Why a source's CA bundle (`caCertificate`) is refused: it must be one or more PEM
 * certificates and nothing else, each one readable and valid today. Whether it is the right
 * CA only the server's certificate can tell, at the next sync (its error says so).
 */
export function caBundleProblem(pem: string, now = new Date()): string | undefined {
  const blocks = [...pem.matchAll(PEM_CERTIFICATE)];
  if (blocks.length === 0) return 'must be one or more PEM certificates (-----BEGIN CERTIFICATE-----)';
  if (blocks.length > CA_BUNDLE_MAX_CERTIFICATES)
    return `holds ${blocks.length} certificates; at most ${CA_BUNDLE_MAX_CERTIFICATES}`;
  if (pem.replace(PEM_CERTIFICATE, '').trim() !== '')
    return 'must hold PEM certificates only (no private key or other text between them)';
  for (const [index, block] of blocks.entries()) {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(block[0]);
    } catch {
      return `certificate ${index + 1} is not a readable X.509 certificate`;
    }
    if (new Date(certificate.validTo) < now)
      return `certificate ${index + 1} (${certificate.subject.replace(/\n/g, ', ')}) expired on ${new Date(certificate.validTo).toISOString()}`;
  }
  return undefined;
}

/** The bundle as stored and handed to git: LF line ends, one final newline. */
export const normalCaBundle = (pem: string) => `${pem.replace(/\r\n/g, '\n').trim()}\n`;
