import { decrypt, encrypt } from '../../platform/secrets';
import type { GitSourceRow } from '../../db/repos/git-sources';

/**
 * A Git source's credentials: an HTTPS token (sent as the password of basic auth, with an
 * optional user name; GitHub, GitLab, Gitea and Bitbucket all accept a token that way) or
 * an SSH private key with the known-hosts entry that pins the server's host key. They are
 * write-only: sealed with Secrets:EncryptionKey, bound to the source's id, never returned.
 */
export type GitCredentials =
  { kind: 'https'; username?: string; token: string } | { kind: 'ssh'; privateKey: string; knownHosts: string };

export type SealedCredentialColumns = Pick<
  GitSourceRow,
  'credentials_kind' | 'credentials_iv' | 'credentials_tag' | 'credentials_ciphertext'
>;

const context = (sourceId: string) => `git-source:${sourceId}:credentials`;

export const NO_CREDENTIALS: SealedCredentialColumns = {
  credentials_kind: null,
  credentials_iv: null,
  credentials_tag: null,
  credentials_ciphertext: null,
};

/** The columns that store `credentials` for the source `sourceId` (null: none). */
export function sealCredentials(
  key: Buffer,
  sourceId: string,
  credentials: GitCredentials | null,
): SealedCredentialColumns {
  if (!credentials) return NO_CREDENTIALS;
  const sealed = encrypt(key, JSON.stringify(credentials), context(sourceId));
  return {
    credentials_kind: credentials.kind,
    credentials_iv: sealed.iv,
    credentials_tag: sealed.tag,
    credentials_ciphertext: sealed.ciphertext,
  };
}

/** The source's credentials in clear, for the worker that talks to the repository; null when it has none. */
export function openCredentials(
  key: Buffer,
  row: Pick<GitSourceRow, 'id'> & SealedCredentialColumns,
): GitCredentials | null {
  if (!row.credentials_ciphertext || !row.credentials_iv || !row.credentials_tag) return null;
  const clear = decrypt(
    key,
    { iv: row.credentials_iv, tag: row.credentials_tag, ciphertext: row.credentials_ciphertext },
    context(row.id),
  );
  return JSON.parse(clear.toString('utf8')) as GitCredentials;
}
