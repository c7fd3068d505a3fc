/**
 * Configuration containers: creating one, the same from the configurations API, a Git
 * source's sweep (a new file) and a federated copy (a name this installation lacks), with
 * one `configuration.created` shape whoever caused it: the configuration as GET shows it;
 * changing its name, description and labels.
 */
import type { Knex } from 'knex';
import {
  insertConfiguration,
  updateConfiguration,
  type ConfigurationChanges,
  type ConfigurationRow,
  type NewConfiguration,
} from '../../db/repos/configurations';
import { emitEvents } from '../../db/repos/events';
import { DomainError, refuseDuplicate } from '../errors';
import { lockConfigurationAt } from './versions';

const SOURCE = '/api/configurations';

/** The name is another configuration's in the tenant (names are unique per tenant). */
export class ConfigurationNameTakenError extends DomainError {
  override readonly name = 'ConfigurationNameTakenError';
  constructor(readonly configurationName: string) {
    super(`A configuration named '${configurationName}' already exists.`);
  }
}

/** How a configuration reads, in the API and in its events. */
export function configurationView(row: ConfigurationRow) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    format: row.format,
    labels: row.labels,
    latestVersion: row.latest_version,
    publishedVersion: row.published_version,
    managedBy: row.managed_by,
    sourcePath: row.source_path,
    sourceRemovedAt: row.source_removed_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Creates a configuration (without versions) in the caller's transaction and announces it.
 * The insert runs in a savepoint, so a taken name is a ConfigurationNameTakenError the
 * caller may act on (a federated copy uses the configuration a concurrent copy created)
 * with its transaction intact.
 */
export async function createConfiguration(trx: Knex.Transaction, fields: NewConfiguration): Promise<ConfigurationRow> {
  const row = await trx
    .transaction((savepoint) => insertConfiguration(savepoint, fields))
    .catch(refuseDuplicate(() => new ConfigurationNameTakenError(fields.name)));
  await emitEvents(trx, [
    {
      tenantId: row.tenant_id,
      type: 'configuration.created',
      source: SOURCE,
      subject: row.id,
      data: configurationView(row),
    },
  ]);
  return row;
}

/** Replaces a configuration's name, description and labels (never one a Git source manages) and announces it. */
export async function changeConfiguration(
  trx: Knex.Transaction,
  tenantId: string,
  request: { id: string; versions?: number[]; changes: ConfigurationChanges },
): Promise<ConfigurationRow> {
  await lockConfigurationAt(trx, tenantId, request.id, request.versions);
  const row = await updateConfiguration(trx, request.id, request.changes).catch(
    refuseDuplicate(() => new ConfigurationNameTakenError(request.changes.name)),
  );
  await emitEvents(trx, [
    { tenantId, type: 'configuration.updated', source: SOURCE, subject: row.id, data: configurationView(row) },
  ]);
  return row;
}
