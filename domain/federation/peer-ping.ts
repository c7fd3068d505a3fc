import type { Db } from '../../db/connection';
import { emitEvents } from '../../db/repos/events';
import { recordPeerPing, type PeerPingColumns, type PeerRow } from '../../db/repos/federation-peers';
import { isUuid } from '../../db/uuid';
import type { PeerEndpoint, PingReply } from '../../platform/peer-client';
import { DecryptionError } from '../../platform/secrets';
import { peerEndpoint } from './peer-credentials';

/** What `GET /api/federation/ping` answers: who the installation is and where its agents connect. */
export interface PingAnswer {
  installationId: string;
  name: string;
  version: string;
  agentEndpoint: string;
}

/** A peer's error is its own text: kept short, so a peer cannot fill our rows (or our events). */
const MAX_ERROR_CHARS = 1000;

const shortText = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max;

/** The peer's answer, if it is a ping answer at all (it is another installation's word, checked like any input). */
function pingAnswerOf(body: unknown): PingAnswer | undefined {
  const answer = body as Partial<Record<keyof PingAnswer, unknown>> | undefined;
  if (
    typeof answer === 'object' &&
    answer !== null &&
    typeof answer.installationId === 'string' &&
    isUuid(answer.installationId) &&
    shortText(answer.name, 200) &&
    shortText(answer.version, 100) &&
    shortText(answer.agentEndpoint, 2048)
  ) {
    return {
      installationId: answer.installationId.toLowerCase(),
      name: answer.name,
      version: answer.version,
      agentEndpoint: answer.agentEndpoint,
    };
  }
  return undefined;
}

const clip = (text: string) => (text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text);

/**
 * What to record of a ping: a peer that answered is healthy and seen now, with what it said
 * of itself; one that did not is unhealthy with why (its problem's status and title for a
 * refusal, e.g. a 401 for a wrong credential), and keeps what it said last time.
 */
export function pingColumns(reply: PingReply): PeerPingColumns {
  if ('error' in reply) return unhealthy(reply.at, reply.latencyMs, reply.error);
  const answer = pingAnswerOf(reply.answer);
  if (!answer)
    return unhealthy(reply.at, reply.latencyMs, 'the ping answered with something that is not a ping answer');
  return {
    healthy: true,
    last_ping_at: reply.at,
    last_seen_at: reply.at,
    last_latency_ms: reply.latencyMs,
    last_error: null,
    remote_installation_id: answer.installationId,
    remote_name: answer.name,
    remote_version: answer.version,
    remote_agent_endpoint: answer.agentEndpoint,
  };
}

export const UNOPENABLE_CREDENTIAL =
  'the stored credential no longer opens with Secrets:EncryptionKey (was the key changed?): send it again with PUT';

/**
 * Where to call the peer with its stored credential; undefined when the credential no
 * longer opens (the key changed): that peer cannot be called, but the others still can.
 */
export function openPeerEndpoint(key: Buffer, row: PeerRow): PeerEndpoint | undefined {
  try {
    return peerEndpoint(key, row);
  } catch (error) {
    if (error instanceof DecryptionError) return undefined;
    throw error;
  }
}

/** A stored peer whose credential no longer opens: unhealthy, saying why, without a call. */
export const unopenable = (): PeerPingColumns => unhealthy(new Date(), 0, UNOPENABLE_CREDENTIAL);

/** The remote_* columns are left out: a peer that does not answer is still who it said it was. */
function unhealthy(at: Date, latencyMs: number, error: string): PeerPingColumns {
  return { healthy: false, last_ping_at: at, last_latency_ms: latencyMs, last_error: clip(error) };
}

/**
 * Records a periodic ping and, when the peer's health flipped, emits
 * `federation.peer.health-changed` in the same transaction. A peer changed or deleted since
 * it was read records nothing (its next sweep pings what it is now).
 */
export async function recordPingAndAnnounce(
  trx: Db,
  peer: Pick<PeerRow, 'id' | 'row_version'>,
  ping: PeerPingColumns,
): Promise<{ changed: boolean } | undefined> {
  const recorded = await recordPeerPing(trx, peer.id, peer.row_version, ping);
  if (!recorded) return undefined;
  const { row, wasHealthy } = recorded;
  if (row.healthy === wasHealthy) return { changed: false };
  await announceHealthChange(trx, row);
  return { changed: true };
}

/** `federation.peer.health-changed`: the peer's ping started or stopped answering. */
export async function announceHealthChange(trx: Db, row: PeerRow): Promise<void> {
  await emitEvents(trx, [
    {
      tenantId: row.tenant_id,
      type: 'federation.peer.health-changed',
      source: '/api/federation/peers',
      subject: row.id,
      data: { id: row.id, name: row.name, healthy: row.healthy, error: row.last_error },
    },
  ]);
}
