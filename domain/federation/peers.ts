/**
 * Pairing with another installation, changing the pairing and unpairing, each with its
 * `federation.peer.*` event (the peer as the API shows it, never its credential). What a
 * ping found is handed in: the caller pings first (platform/peer-client.ts), holding no
 * transaction meanwhile, and the write is made over the version it pinged.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/connection';
import { emitEvents, type EventType } from '../../db/repos/events';
import {
  deletePeer,
  findPeer,
  insertPeer,
  lockPeer,
  updatePeer,
  type PeerPingColumns,
  type PeerRow,
} from '../../db/repos/federation-peers';
import { nameTaken, NotFoundError, StaleVersionError } from '../errors';
import { sealPeerCredential } from './peer-credentials';
import { announceHealthChange } from './peer-ping';

const SOURCE = '/api/federation/peers';

/** How a peer reads, in the API and in its events. */
export function peerView(row: PeerRow) {
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    id: row.id,
    name: row.name,
    baseUrl: row.base_url,
    healthy: row.healthy,
    lastPingAt: iso(row.last_ping_at),
    lastSeenAt: iso(row.last_seen_at),
    latencyMs: row.last_latency_ms,
    lastError: row.last_error,
    remote: row.remote_installation_id
      ? {
          installationId: row.remote_installation_id,
          name: row.remote_name!,
          version: row.remote_version!,
          agentEndpoint: row.remote_agent_endpoint!,
        }
      : null,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

async function announce(db: Db, row: PeerRow, type: EventType) {
  await emitEvents(db, [{ tenantId: row.tenant_id, type, source: SOURCE, subject: row.id, data: peerView(row) }]);
}

/** What a peer at a new origin no longer is: the installation the old address answered for. */
const FORGET_REMOTE = {
  last_seen_at: null,
  remote_installation_id: null,
  remote_name: null,
  remote_version: null,
  remote_agent_endpoint: null,
} satisfies Partial<PeerRow>;

/** Stores a new peer with its sealed credential and what its ping found. */
export async function pairPeer(
  trx: Db,
  key: Buffer,
  request: { tenantId: string; name: string; baseUrl: string; credential: string; createdBy: string },
  ping: PeerPingColumns,
): Promise<PeerRow> {
  const id = randomUUID(); // before the insert: the sealed credential is bound to it
  const row = await insertPeer(trx, {
    id,
    tenant_id: request.tenantId,
    name: request.name,
    base_url: request.baseUrl,
    created_by: request.createdBy,
    ...sealPeerCredential(key, id, request.credential),
    ...ping,
  }).catch(nameTaken('federation peer', request.name));
  await announce(trx, row, 'federation.peer.created');
  return row;
}

/**
 * Changes a peer over the version that was pinged (`current`): a change made meanwhile is
 * not overwritten (StaleVersionError; NotFoundError when it went). `credential` undefined
 * keeps the stored one; `movedOrigin` forgets who the old address answered for.
 */
export async function changePeer(
  trx: Db,
  key: Buffer,
  current: PeerRow,
  changes: { name: string; baseUrl: string; credential?: string; movedOrigin: boolean },
  ping: PeerPingColumns,
): Promise<PeerRow> {
  const updated = await updatePeer(
    trx,
    current.tenant_id,
    current.id,
    {
      name: changes.name,
      base_url: changes.baseUrl,
      ...(changes.credential === undefined ? {} : sealPeerCredential(key, current.id, changes.credential)),
      ...(changes.movedOrigin ? FORGET_REMOTE : {}),
      ...ping,
    },
    [current.row_version],
  ).catch(nameTaken('federation peer', changes.name));
  if (!updated) {
    if (!(await findPeer(trx, current.tenant_id, current.id))) throw new NotFoundError('federation peer', current.id);
    throw new StaleVersionError('federation peer', current.id);
  }
  await announce(trx, updated, 'federation.peer.updated');
  if (updated.healthy !== current.healthy) await announceHealthChange(trx, updated);
  return updated;
}

/** Unpairs: the peer and its credential are deleted (If-Match: `versions`). */
export async function unpairPeer(db: Db, tenantId: string, id: string, versions?: number[]): Promise<void> {
  const row = await lockPeer(db, tenantId, id);
  if (!row) throw new NotFoundError('federation peer', id);
  if (versions && !versions.includes(row.row_version)) throw new StaleVersionError('federation peer', id);
  await deletePeer(db, row.id);
  await emitEvents(db, [
    {
      tenantId: row.tenant_id,
      type: 'federation.peer.deleted',
      source: SOURCE,
      subject: row.id,
      data: { id: row.id, name: row.name, baseUrl: row.base_url },
    },
  ]);
}
