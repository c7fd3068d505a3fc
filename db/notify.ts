import type { Db } from './connection';

/**
 * NOTIFY, the one way our processes tell each other of a change. Sent inside the caller's
 * transaction, a notification is delivered at commit (and not at all on rollback).
 * Payloads are capped at 8000 bytes.
 */
export async function notify(db: Db, channel: string, payload: string): Promise<void> {
  await db.raw('SELECT pg_notify(?, ?)', [channel, payload]);
}

/** One notification per payload, in one statement. */
export async function notifyEach(db: Db, channel: string, payloads: string[]): Promise<void> {
  await db.raw('SELECT pg_notify(?, payload) FROM unnest(?::text[]) AS payload', [channel, payloads]);
}
