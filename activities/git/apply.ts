/**
 * A sweep's effect on configurations: each configuration file of the tree is validated and,
 * when its content changed, saved as a new version (published when the source says so);
 * configurations whose file left the branch are marked. One transaction per file, so a
 * broken or refused file is that file's error and the others apply.
 */
import type { Knex } from 'knex';
import {
  findConfigurationByName,
  listManagedConfigurations,
  lockConfiguration,
  setSourceFile,
  type ConfigurationRow,
} from '../../db/repos/configurations';
import { findVersion, type VersionProvenance } from '../../db/repos/configuration-versions';
import { holdGitSource, type GitSourceRow } from '../../db/repos/git-sources';
import type { SyncRunChange, SyncRunFileError } from '../../db/repos/git-sync-runs';
import { createConfiguration } from '../../domain/configurations/configurations';
import { CONTENT_LIMIT_BYTES, contentHash } from '../../domain/configurations/content';
import {
  checkVersionContent,
  publishVersion,
  refuseOtherFormat,
  saveVersion,
  type CheckedContent,
} from '../../domain/configurations/versions';
import { DomainError } from '../../domain/errors';
import type { SourceFile } from '../../domain/git/files';
import type { FetchedCommit } from './repository';

/**
 * A configuration file of the tree, with its content (undefined when over the size limit or
 * `refused`: a file that cannot be read as a configuration, e.g. a link leaving the source).
 */
export interface FileAtTip extends SourceFile {
  size: number;
  content?: string;
  refused?: string;
}

export interface Applied {
  changes: SyncRunChange[];
  fileErrors: SyncRunFileError[];
}

/** Why a file cannot be applied; the sweep records it and goes on with the other files. */
class FileRefused extends Error {}

/** The source was deleted during the sweep: its runs went with it, and nothing more may claim a configuration for it. */
export class SourceDeleted extends Error {}

export async function applyFiles(
  db: Knex,
  source: GitSourceRow,
  commit: FetchedCommit,
  files: FileAtTip[],
): Promise<Applied> {
  const out: Applied = { changes: [], fileErrors: [] };
  const managed = new Map((await listManagedConfigurations(db, source.id)).map((row) => [row.source_path, row]));
  /** Configurations a file of this tree maps to (a file that moved keeps its configuration). */
  const seen = new Set<string>();
  for (const file of files) {
    try {
      const content = await checkFile(file);
      const change = await db.transaction((trx) =>
        applyFile(trx, source, commit, file, content, managed.get(file.path), seen),
      );
      if (change) out.changes.push(change);
    } catch (error) {
      // A domain refusal (the configuration's format) is that file's error too; SourceDeleted ends the sweep.
      if (!(error instanceof FileRefused || error instanceof DomainError)) throw error;
      const known = managed.get(file.path);
      if (known) seen.add(known.id); // a broken file is still there: its configuration is not removed
      out.fileErrors.push({ path: file.path, error: error.message });
    }
  }
  for (const row of managed.values()) {
    if (row.source_path && !seen.has(row.id) && !row.source_removed_at) {
      const path = row.source_path;
      await db.transaction(async (trx) => {
        if (!(await holdGitSource(trx, source.id))) throw new SourceDeleted();
        await setSourceFile(trx, row.id, { path, removed: true });
      });
      out.changes.push({ path: row.source_path, configurationId: row.id, name: row.name, change: 'removed' });
    }
  }
  return out;
}

/** The file's content as a version (its error otherwise): checked before the file's transaction opens. */
async function checkFile(file: FileAtTip): Promise<CheckedContent> {
  if (file.refused) throw new FileRefused(file.refused);
  // A blob over the limit is not even read: its size is known from the tree.
  if (file.content === undefined)
    throw new FileRefused(`${file.size} bytes; a configuration holds at most ${CONTENT_LIMIT_BYTES} bytes (1 MiB)`);
  return checkVersionContent(file.format, file.content);
}

async function applyFile(
  trx: Knex.Transaction,
  source: GitSourceRow,
  commit: FetchedCommit,
  file: FileAtTip,
  content: CheckedContent,
  known: ConfigurationRow | undefined,
  seen: Set<string>,
): Promise<SyncRunChange | undefined> {
  // A configuration claimed after the source's deletion released the others would stay managed by nothing.
  if (!(await holdGitSource(trx, source.id))) throw new SourceDeleted();
  const found = known ?? (await adoptOrCreate(trx, source, file));
  const row = (await lockConfiguration(trx, source.tenant_id, found.id))!;
  refuseOtherFormat(row, file.format);
  seen.add(row.id);
  const restored = row.source_removed_at !== null;
  if (restored || row.source_path !== file.path) await setSourceFile(trx, row.id, { path: file.path, removed: false });
  const latest = row.latest_version > 0 ? await findVersion(trx, row.id, row.latest_version) : undefined;
  const change = row.latest_version === 0 ? 'created' : 'updated';
  const base = { path: file.path, configurationId: row.id, name: row.name };
  if (latest?.content_hash === contentHash(content.text))
    return restored ? { ...base, change: 'restored', version: latest.version } : undefined;
  const provenance: VersionProvenance = {
    sourceId: source.id,
    path: file.path,
    commitSha: commit.sha,
    author: commit.author,
    message: commit.message,
  };
  const saved = await saveVersion(trx, row, { content, author: `git:${commit.author}`, provenance });
  const version = saved.version.version;
  if (source.auto_publish) await publishVersion(trx, source.tenant_id, row.id, version, `git:${source.name}`);
  return { ...base, change, version, published: source.auto_publish };
}

/**
 * The configuration a file maps to when the source does not manage one for it yet: created
 * (managed by the source), or an existing one this source already manages under its name
 * (the file moved, e.g. from .yml to .yaml). A name another owner uses is never taken over.
 */
async function adoptOrCreate(trx: Knex.Transaction, source: GitSourceRow, file: FileAtTip): Promise<ConfigurationRow> {
  const existing = await findConfigurationByName(trx, source.tenant_id, file.name);
  if (existing && existing.managed_by !== source.id)
    throw new FileRefused(
      `a configuration named '${file.name}' already exists and is not managed by this source; rename the file or the configuration`,
    );
  if (existing) return existing;
  return createConfiguration(trx, {
    tenant_id: source.tenant_id,
    name: file.name,
    description: '',
    format: file.format,
    labels: {},
    managed_by: source.id,
    source_path: file.path,
  });
}
