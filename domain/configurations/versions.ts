import type { Knex } from 'knex';
import type { ConfigurationRow } from '../../db/repos/configurations';
import {
  insertDraft,
  publishDraft,
  type VersionProvenance,
  type VersionRow,
} from '../../db/repos/configuration-versions';
import { emitEvents, type EventType, type NewEvent } from '../../db/repos/events';
import { contentHash } from './content';

/**
 * Saving and publishing versions, with their `configuration.version-*` events: one code path
 * for the configurations API and the Git sweep, so a version looks and announces itself the
 * same whichever way it came.
 */

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

/** Saves a draft of a locked configuration (content already validated) and announces it. */
export async function saveVersion(
  trx: Knex.Transaction,
  tenantId: string,
  configurationId: string,
  draft: { content: string; author: string; provenance?: VersionProvenance },
): Promise<{ configuration: ConfigurationRow; version: VersionRow }> {
  const saved = await insertDraft(trx, configurationId, { ...draft, content_hash: contentHash(draft.content) });
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
