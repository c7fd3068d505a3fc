import type { Db } from '../connection';
import { updateVersioned } from '../versioned';

export interface TenantSettings {
  patDefaultTtlDays?: number;
}

export interface TenantRow {
  id: string;
  display_name: string;
  description: string;
  labels: Record<string, string>;
  settings: TenantSettings;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

export interface TenantChanges {
  display_name: string;
  description: string;
  labels: Record<string, string>;
  settings: TenantSettings;
}

/** Tenants come into being with their first authenticated caller. */
export async function ensureTenant(db: Db, id: string): Promise<void> {
  await db('tenants').insert({ id, display_name: id }).onConflict('id').ignore();
}

export async function findTenant(db: Db, id: string): Promise<TenantRow | undefined> {
  return db<TenantRow>('tenants').where({ id }).first();
}

/**
 * Writes the tenant if its row version is one of `versions` (absent: unconditionally).
 * The version check is in the UPDATE itself, so of two writers holding the same ETag only
 * the first to commit wins; the other matches no row.
 */
export async function updateTenant(
  db: Db,
  id: string,
  changes: TenantChanges,
  versions?: number[],
): Promise<TenantRow | undefined> {
  return updateVersioned<TenantRow>(db, 'tenants', { id }, versions, {
    ...changes,
    labels: JSON.stringify(changes.labels),
    settings: JSON.stringify(changes.settings),
  });
}
