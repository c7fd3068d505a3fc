import type { Db } from './connection';

/**
 * NOTIFY, the one way our processes tell each other of a change. Sent inside the caller's
 * transaction, a notification is delivered at commit (and not at all on rollback).
 * Payloads are capped at 8000 bytes.
 */
export async function notify(db: Db, channel: string, payload: string): Promise<void> {
  await db.raw('SELECT pg_notify(?, ?)', [channel, payload]);
}

/** One notification per payload, all in one statement (a push to 100,000 agents sends 500). */
export async function notifyEach(db: Db, channel: string, payloads: readonly string[]): Promise<void> {
  if (payloads.length === 0) return;
  await db.raw('SELECT count(*) FROM (SELECT pg_notify(?, payload) FROM unnest(?::text[]) AS payload) sent', [
    channel,
    payloads as string[],
  ]);
}

/**
 * Cuts agents off on every api replica: each agent listener LISTENs here and closes the
 * live sessions the payload names.
 */
export const AGENT_CUTOFF_CHANNEL = 'fleet_agent_cutoff';

/** `handed-over`: the agent now belongs to a peer installation (its session ends there, not here). */
export type AgentCutoff =
  | { action: 'revoke' | 'reject' | 'approve' | 'handed-over'; agentId: string }
  | { action: 'token-revoked'; tokenId: string };

export async function notifyAgentCutoff(db: Db, cutoff: AgentCutoff): Promise<void> {
  await notify(db, AGENT_CUTOFF_CHANNEL, JSON.stringify(cutoff));
}

/**
 * The handover offers of these agents changed (offered, or withdrawn): the replica holding an
 * agent's socket sends it what handover_agents now says. Payload: JSON `{ "agentIds": [...] }`,
 * at most 100 ids a notification (NOTIFY payloads are capped at 8000 bytes).
 */
export const AGENT_HANDOVER_CHANNEL = 'agent_handover';

export async function notifyAgentHandover(db: Db, agentIds: readonly string[]): Promise<void> {
  const payloads: string[] = [];
  for (let i = 0; i < agentIds.length; i += 100)
    payloads.push(JSON.stringify({ agentIds: agentIds.slice(i, i + 100) }));
  await notifyEach(db, AGENT_HANDOVER_CHANNEL, payloads);
}
