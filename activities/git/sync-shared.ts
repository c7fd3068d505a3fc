/**
 * What the git-sync activities share: their dependencies, how git reaches a source's
 * repository, and where the source's working copy lives.
 */
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { GitSourceRow } from '../../db/repos/git-sources';
import { openCredentials } from '../../domain/git/credentials';
import { encryptionKey } from '../../platform/secrets';
import type { Outbound } from '../../platform/outbound';
import type { Settings } from '../../platform/settings';
import type { GitAccess } from './repository';

export interface GitSyncDeps {
  db: Knex;
  settings: Pick<Settings, 'git' | 'encryptionKey' | 'isDevelopment'>;
  /** Where repositories may be reached (the policy of Outbound:*). */
  outbound: Outbound;
  logger?: Logger;
}

/** The source's working copy: a bare repository under Git:WorkDir/<sourceId>. */
export function workingCopy(settings: GitSyncDeps['settings'], sourceId: string): string {
  return join(settings.git.workDir, sourceId);
}

/** How git reaches the source's repository: its URL, its credentials opened, the outbound policy. */
export function accessOf(
  { settings, outbound }: Pick<GitSyncDeps, 'settings' | 'outbound'>,
  source: GitSourceRow,
): GitAccess {
  return {
    url: source.repo_url,
    credentials: openCredentials(encryptionKey(settings), source),
    caCertificate: source.ca_certificate,
    outbound,
    fileRoots: settings.git.fileRoots,
  };
}
