/**
 * TLS session resumption across the replicas of one installation (docs/agent-gateway.md,
 * "Session resumption"). An agent that held a session resumes it on whichever replica it
 * reaches next: after a replica restarts, its agents come back with an abbreviated handshake
 * (no certificate signed, sent or verified) instead of a full one each.
 *
 * Every replica derives the same ticket keys from Secrets:EncryptionKey (HKDF-SHA256), one
 * set per period of TICKET_PERIOD_SECONDS since the epoch: replicas switch to the next set at
 * the same moment, by the clock, with nothing to share but the key they already have. Node
 * accepts tickets of the current set only, so a ticket lives until the end of its period at
 * most; after a switch an agent's next connection is a full handshake, once.
 */
import { hkdfSync } from 'node:crypto';
import type { Server as TlsServer } from 'node:tls';

/** How long one set of ticket keys is in use, and so the longest a session can be resumed. */
export const TICKET_PERIOD_SECONDS = 24 * 3600;

/** The session id context every replica sets (OpenSSL resumes a session only within its context). */
export const SESSION_ID_CONTEXT = 'fleet-agent-gateway';

/** Node's ticket keys: 16 bytes of key name, 16 of HMAC secret, 16 of AES key. */
const TICKET_KEYS_BYTES = 48;

/** The period `at` falls in (whole periods since the epoch). */
export const ticketPeriod = (at: number) => Math.floor(at / 1000 / TICKET_PERIOD_SECONDS);

/** The ticket keys of a period: the same on every replica that has the same encryption key. */
export function ticketKeys(encryptionKey: Buffer, period: number): Buffer {
  return Buffer.from(
    hkdfSync('sha256', encryptionKey, 'fleet agent gateway', `tls session tickets ${period}`, TICKET_KEYS_BYTES),
  );
}

/**
 * Keeps the server's ticket keys on the current period's set; returns the stop. The timer
 * fires at each period's end (a late timer only makes the switch late, never early).
 */
export function rotateTicketKeys(server: TlsServer, encryptionKey: Buffer, now = Date.now): () => void {
  let timer: NodeJS.Timeout | undefined;
  const apply = () => {
    const period = ticketPeriod(now());
    server.setTicketKeys(ticketKeys(encryptionKey, period));
    timer = setTimeout(apply, (period + 1) * TICKET_PERIOD_SECONDS * 1000 - now());
    timer.unref();
  };
  apply();
  return () => clearTimeout(timer);
}
