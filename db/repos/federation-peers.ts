import type { Knex } from 'knex';
import type { Db } from '../connection';
import { updateVersioned } from '../versioned';

/** A federation peer: another installation this tenant calls with the `peer` PAT it issued us. */
export interface PeerRow {
  id: string;
  tenant_id: string;
  name: string;
  base_url: string;
  credential_iv: Buffer;
  credential_tag: Buffer;
  credential_ciphertext: Buffer;
  remote_installation_id: string | null;
  remote_name: string | null;
  remote_version: string | null;
  remote_agent_endpoint: string | null;
  healthy: boolean;
  last_ping_at: Date | null;
  last_seen_at: Date | null;
  last_latency_ms: number | null;
  last_error: string | null;
  created_by: string;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

/** What one ping of the peer found: the columns it writes (what the peer said of itself only when it answered). */
export type PeerPingColumns = Pick<PeerRow, 'healthy' | 'last_ping_at' | 'last_latency_ms' | 'last_error'> &
  Partial<
    Pick<
      PeerRow,
      'last_seen_at' | 'remote_installation_id' | 'remote_name' | 'remote_version' | 'remote_agent_endpoint'
    >
  >;

/** The columns an operator sets (the sealed credential has its own). */
export type PeerSettings = Pick<PeerRow, 'name' | 'base_url'>;

export async function findPeer(db: Db, tenantId: string, id: string): Promise<PeerRow | undefined> {
  return db<PeerRow>('federation_peers').where({ tenant_id: tenantId, id }).first();
}

/** The tenant's peers; the caller orders and pages them. */
export function listPeersQuery(db: Db, tenantId: string): Knex.QueryBuilder {
  return db('federation_peers').select('federation_peers.*').where('federation_peers.tenant_id', tenantId);
}

/** Every peer of the tenant, by name (a federated list asks each of them). */
export async function tenantPeers(db: Db, tenantId: string): Promise<PeerRow[]> {
  return db<PeerRow>('federation_peers').where({ tenant_id: tenantId }).orderBy(['name', 'id']);
}

/** Throws the database's unique violation (23505) when the tenant has a peer of that name. */
export async function insertPeer(
  db: Db,
  peer: Pick<PeerRow, 'id' | 'tenant_id' | 'name' | 'base_url' | 'created_by' | 'credential_iv' | 'credential_tag'> &
    Pick<PeerRow, 'credential_ciphertext'> &
    PeerPingColumns,
): Promise<PeerRow> {
  const [row] = await db<PeerRow>('federation_peers')
    .insert(peer as never)
    .returning('*');
  return row!;
}

/** Locks the peer for a change (If-Match is checked by the caller against the locked row). */
export async function lockPeer(db: Db, tenantId: string, id: string): Promise<PeerRow | undefined> {
  return db<PeerRow>('federation_peers').where({ tenant_id: tenantId, id }).forUpdate().first();
}

/**
 * Writes an operator's change if the row version is one of `versions`, in the UPDATE
 * itself; undefined when no row matched (the caller tells 404 from 412).
 */
export async function updatePeer(
  db: Db,
  tenantId: string,
  id: string,
  changes: Partial<PeerRow>,
  versions?: number[],
): Promise<PeerRow | undefined> {
  return updateVersioned<PeerRow>(db, 'federation_peers', { tenant_id: tenantId, id }, versions, changes);
}

export async function deletePeer(db: Db, id: string): Promise<void> {
  await db('federation_peers').where({ id }).delete();
}

/**
 * Records a periodic ping, unless the peer changed since it was read (`rowVersion`): that
 * ping went to an address or with a credential the peer no longer has. Health is not an
 * operator's change, so the row version (the ETag) stays. Returns the row and whether it
 * was healthy before, or undefined when nothing was written.
 */
export async function recordPeerPing(
  db: Db,
  id: string,
  rowVersion: number,
  ping: PeerPingColumns,
): Promise<{ row: PeerRow; wasHealthy: boolean } | undefined> {
  const result = await db.raw<{ rows: Array<PeerRow & { was_healthy: boolean }> }>(
    `WITH before AS (
       SELECT id, healthy FROM federation_peers WHERE id = ? AND row_version = ? FOR UPDATE
     )
     UPDATE federation_peers p SET ${Object.keys(ping)
       .map(() => '?? = ?')
       .join(', ')}
       FROM before WHERE p.id = before.id
     RETURNING p.*, before.healthy AS was_healthy`,
    [id, rowVersion, ...Object.entries(ping).flat()],
  );
  const found = result.rows[0];
  if (!found) return undefined;
  const { was_healthy: wasHealthy, ...row } = found;
  return { row, wasHealthy };
}

/** Every peer of every tenant, a page at a time after `afterId` (ordered by id): the health sweep. */
export async function peersAfter(db: Db, afterId: string | null, limit: number): Promise<PeerRow[]> {
  const query = db<PeerRow>('federation_peers').orderBy('id').limit(limit);
  if (afterId) query.where('id', '>', afterId);
  return query;
}
