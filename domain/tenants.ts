/**
 * A tenant's own settings (name, description, labels, the default PAT lifetime): changed
 * by its admins, announced with `tenant.updated`, the tenant as the API shows it.
 */
import type { Db } from '../db/connection';
import { emitEvents } from '../db/repos/events';
import { findTenant, updateTenant, type TenantChanges, type TenantRow } from '../db/repos/tenants';
import { NotFoundError, StaleVersionError } from './errors';

/** How a tenant reads, in the API and in its events. */
export function tenantView(row: TenantRow) {
  return {
    id: row.id,
    displayName: row.display_name,
    description: row.description,
    labels: row.labels,
    settings: row.settings,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Replaces the tenant's settings (If-Match: `versions`). */
export async function changeTenant(
  db: Db,
  id: string,
  changes: TenantChanges,
  versions?: number[],
): Promise<TenantRow> {
  const row = await updateTenant(db, id, changes, versions);
  if (!row) {
    if (await findTenant(db, id)) throw new StaleVersionError('tenant', id);
    throw new NotFoundError('tenant', id);
  }
  await emitEvents(db, [
    { tenantId: id, type: 'tenant.updated', source: '/api/tenant', subject: id, data: tenantView(row) },
  ]);
  return row;
}
