import type { Knex } from 'knex';
import { lockConfiguration, type ConfigurationRow } from '../../db/repos/configurations';
import {
  findVersion,
  insertDraft,
  publishDraft,
  type VersionProvenance,
  type VersionRow,
} from '../../db/repos/configuration-versions';
import { emitEvents, type EventType, type NewEvent } from '../../db/repos/events';
import {
  ContentTooLargeError,
  DomainError,
  InvalidContentError,
  ManagedByGitError,
  NotFoundError,
  StaleVersionError,
} from '../errors';
import { CONTENT_LIMIT_BYTES, contentBytes, contentHash, type Format } from './content';
import { checkContent } from './content-check';

/**
 * Saving and publishing versions, with their `configuration.version-*` events: one code path
 * for the configurations API, the Git sweep and federated copies, so a version is held to
 * the same rules, looks and announces itself the same whichever way it came.
 */

declare const checked: unique symbol;

/**
 * A content that fits the size limit and parses in its format. Only checkVersionContent
 * makes one, and saveVersion takes nothing else: no version is written unchecked.
 */
export interface CheckedContent {
  readonly format: Format;
  readonly text: string;
  readonly [checked]: true;
}

/**
 * Checks a would-be version's content: its size first (cheap), then that it parses in
 * `format` (on a parsing thread when large). Run it before the transaction that saves the
 * version: parsing 1 MiB must hold neither a connection nor a lock. Throws
 * ContentTooLargeError or InvalidContentError (and ThreadPoolBusy when every parsing thread
 * is taken).
 */
export async function checkVersionContent(format: Format, text: string): Promise<CheckedContent> {
  const size = contentBytes(text);
  if (size > CONTENT_LIMIT_BYTES) throw new ContentTooLargeError(size, CONTENT_LIMIT_BYTES);
  const problem = await checkContent(format, text);
  if (problem) throw new InvalidContentError(problem);
  return { format, text } as CheckedContent;
}

/**
 * A configuration managed by a Git source takes versions from that source alone (its sweep
 * says so with the version's provenance); everyone else changes it in the repository.
 */
export function refuseManagedByGit(configuration: ConfigurationRow, gitSourceId?: string): void {
  if (configuration.managed_by && configuration.managed_by !== gitSourceId) {
    throw new ManagedByGitError(
      `Configuration '${configuration.name}' is managed by Git source '${configuration.managed_by}'; change it in the repository.`,
    );
  }
}

/** A configuration's format is fixed: a version in another format is refused. */
export function refuseOtherFormat(configuration: ConfigurationRow, format: Format): void {
  if (configuration.format !== format) {
    throw new DomainError(
      `Configuration '${configuration.name}' is ${configuration.format}; a ${format} version cannot be saved in it.`,
    );
  }
}

const SOURCE = '/api/configurations';

/** The event a version's save or publication emits. */
export function versionEvent(
  tenantId: string,
  type: EventType,
  configuration: Pick<ConfigurationRow, 'id' | 'name'>,
  version: VersionRow,
): NewEvent {
  return {
    tenantId,
    type,
    source: SOURCE,
    subject: configuration.id,
    data: {
      name: configuration.name,
      configurationId: version.configuration_id,
      version: version.version,
      state: version.state,
      contentHash: version.content_hash,
      author: version.author,
      createdAt: version.created_at.toISOString(),
      publishedAt: version.published_at?.toISOString() ?? null,
      publishedBy: version.published_by,
      ...(version.provenance ? { provenance: version.provenance } : {}),
    },
  };
}

/**
 * Saves a draft of a configuration the caller locked, and announces it: the configuration
 * must take versions from this writer (refuseManagedByGit: a Git source's sweep names itself
 * in `provenance`) and in its content's format.
 */
export async function saveVersion(
  trx: Knex.Transaction,
  configuration: ConfigurationRow,
  draft: { content: CheckedContent; author: string; provenance?: VersionProvenance },
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  refuseManagedByGit(configuration, draft.provenance?.sourceId);
  refuseOtherFormat(configuration, draft.content.format);
  const { text } = draft.content;
  const saved = await insertDraft(trx, configuration.id, {
    content: text,
    content_hash: contentHash(text),
    author: draft.author,
    provenance: draft.provenance,
  });
  const tenantId = configuration.tenant_id;
  await emitEvents(trx, [versionEvent(tenantId, 'configuration.version-saved', saved.configuration, saved.version)]);
  return saved;
}

/** Publishes a draft of a locked configuration and announces it. */
export async function publishVersion(
  trx: Knex.Transaction,
  tenantId: string,
  configurationId: string,
  version: number,
  publishedBy: string,
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const published = await publishDraft(trx, configurationId, version, publishedBy);
  await emitEvents(trx, [
    versionEvent(tenantId, 'configuration.version-published', published.configuration, published.version),
  ]);
  return published;
}

/**
 * The configuration named, locked for an operator's change: it exists, Git does not manage it
 * (unless `gitManagedToo`: publishing is allowed there), the caller's If-Match (`versions`)
 * is current.
 */
export async function lockConfigurationAt(
  trx: Knex.Transaction,
  tenantId: string,
  id: string,
  versions: number[] | undefined,
  { gitManagedToo = false } = {},
): Promise<ConfigurationRow> {
  const row = await lockConfiguration(trx, tenantId, id);
  if (!row) throw new NotFoundError('configuration', id);
  if (!gitManagedToo) refuseManagedByGit(row);
  if (versions && !versions.includes(row.row_version)) throw new StaleVersionError('configuration', id);
  return row;
}

/** Saves an operator's draft: the configuration locked as `lockConfigurationAt` says, then `saveVersion`. */
export async function saveDraft(
  trx: Knex.Transaction,
  tenantId: string,
  request: { id: string; versions?: number[]; content: CheckedContent; author: string },
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const configuration = await lockConfigurationAt(trx, tenantId, request.id, request.versions);
  return saveVersion(trx, configuration, { content: request.content, author: request.author });
}

/**
 * Publishes a version an operator names, also of a Git-managed configuration (a source
 * without autoPublish relies on it). Idempotent: a published version is answered as it is,
 * whatever If-Match the retry still holds.
 */
export async function publishConfigurationVersion(
  trx: Knex.Transaction,
  tenantId: string,
  request: { id: string; version: number; versions?: number[]; publishedBy: string },
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const { id, version } = request;
  const configuration = await lockConfigurationAt(trx, tenantId, id, undefined, { gitManagedToo: true });
  const found = await findVersion(trx, id, version);
  if (!found) throw new NotFoundError('version', `${id}/versions/${version}`);
  if (found.state === 'published') return { configuration, version: found };
  if (request.versions && !request.versions.includes(configuration.row_version))
    throw new StaleVersionError('configuration', id);
  return publishVersion(trx, tenantId, id, version, request.publishedBy);
}
