import type { Db } from './connection';

/**
 * NOTIFY, the one way our processes tell each other of a change. Sent inside the caller's
 * transaction, a notification is delivered at commit (and not at all on rollback).
 * Payloads are capped at 8000 bytes.
 */
export async function notify(db: Db, channel: string, payload: string): Promise<void> {
  await db.raw('SELECT pg_notify(?, ?)', [channel, payload]);
}

/**
 * Cuts agents off on every api replica: each agent listener LISTENs here and closes the
 * live sessions the payload names.
 */
export const AGENT_CUTOFF_CHANNEL = 'fleet_agent_cutoff';

export type AgentCutoff =
  { action: 'revoke' | 'reject' | 'approve'; agentId: string } | { action: 'token-revoked'; tokenId: string };

export async function notifyAgentCutoff(db: Db, cutoff: AgentCutoff): Promise<void> {
  await notify(db, AGENT_CUTOFF_CHANNEL, JSON.stringify(cutoff));
}
