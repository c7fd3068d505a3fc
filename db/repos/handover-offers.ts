import type { Db } from '../connection';

/**
 * What the agent gateway reads of handovers (sender side): which agents are offered a
 * receiver right now (`handover_agents.state = 'offered'`, the partial index
 * handover_agents_offered), and the sealed offer of a handover. The handover workflow's
 * activities write these rows; the gateway only reads them.
 */

export interface OfferedAgent {
  agentId: string;
  handoverId: string;
}

/** Agents with an offer in force, of all tenants, or of `agentIds` only. */
export async function offeredAgents(db: Db, agentIds?: readonly string[]): Promise<OfferedAgent[]> {
  const query = db('handover_agents')
    .select({ agentId: 'agent_id', handoverId: 'handover_id' })
    .where({ state: 'offered', active: true });
  if (agentIds) query.whereRaw('agent_id = ANY(?::uuid[])', [[...agentIds]]);
  return query;
}

/** The handover whose receiver the agent was last offered and that then withdrew it (withdrawn or missing). */
export async function lastWithdrawnHandover(db: Db, agentId: string): Promise<string | undefined> {
  const row = await db('handover_agents')
    .select('handover_id')
    .where({ agent_id: agentId })
    .whereIn('state', ['withdrawn', 'missing'])
    .orderBy('updated_at', 'desc')
    .first();
  return row?.handover_id;
}

export interface SealedOfferRow {
  offer_iv: Buffer;
  offer_tag: Buffer;
  offer_ciphertext: Buffer;
}

/** The handover's sealed offer; undefined until the receiver's token was redeemed into one. */
export async function findSealedOffer(db: Db, handoverId: string): Promise<SealedOfferRow | undefined> {
  const row = (await db('handovers')
    .select('offer_iv', 'offer_tag', 'offer_ciphertext')
    .where({ id: handoverId })
    .whereNotNull('offer_ciphertext')
    .first()) as SealedOfferRow | undefined;
  return row;
}
