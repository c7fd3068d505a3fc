import type { Knex } from 'knex';
import type { Db } from '../connection';
import type { AgentStatus } from './agents';

/**
 * Sender side of a handover (docs/federation.md): the handover and its agents. An agent is
 * in at most one running handover (handover_agents_one_active); its state moves pending →
 * offered → handed-over | withdrawn | missing (withdrawn, not seen here since the offer), or
 * to skipped when it cannot be offered.
 */
export type HandoverState = 'running' | 'completed' | 'compensated' | 'failed';
export const HANDOVER_AGENT_STATES = ['pending', 'offered', 'handed-over', 'withdrawn', 'missing', 'skipped'] as const;
export type HandoverAgentState = (typeof HANDOVER_AGENT_STATES)[number];

export interface HandoverRow {
  id: string;
  tenant_id: string;
  peer_id: string | null;
  peer_name: string;
  state: HandoverState;
  deadline_seconds: number;
  reason: string | null;
  offer_iv: Buffer | null;
  offer_tag: Buffer | null;
  offer_ciphertext: Buffer | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export type HandoverCounts = Record<HandoverAgentState, number>;

export interface HandoverAgentRow {
  handover_id: string;
  agent_id: string;
  state: HandoverAgentState;
  error: string | null;
  updated_at: Date;
}

export type NewHandover = Pick<
  HandoverRow,
  'id' | 'tenant_id' | 'peer_id' | 'peer_name' | 'deadline_seconds' | 'created_by'
>;

/** Agents the tenant may hand over are neither gone (revoked, handed over) nor waiting for approval. */
export const UNHANDABLE_STATUSES: readonly AgentStatus[] = ['revoked', 'handed-over', 'pending-approval'];

export async function insertHandover(db: Db, handover: NewHandover, agentIds: readonly string[]): Promise<HandoverRow> {
  const [row] = await db<HandoverRow>('handovers')
    .insert({ ...handover, state: 'running' } as never)
    .returning('*');
  await db.raw(`INSERT INTO handover_agents (handover_id, agent_id) SELECT ?, unnest(?::uuid[])`, [
    handover.id,
    agentIds as string[],
  ]);
  return row!;
}

export async function findHandover(db: Db, tenantId: string, id: string): Promise<HandoverRow | undefined> {
  return db<HandoverRow>('handovers').where({ tenant_id: tenantId, id }).first();
}

export function listHandoversQuery(db: Db, tenantId: string, filters: { state?: HandoverState }): Knex.QueryBuilder {
  const query = db('handovers').select('*').where({ tenant_id: tenantId });
  if (filters.state) query.where({ state: filters.state });
  return query;
}

/** How many of the handover's agents are in each state (every state present, zeros included). */
export async function handoverCounts(db: Db, handoverId: string): Promise<HandoverCounts> {
  return (await handoverCountsOf(db, [handoverId])).get(handoverId)!;
}

export function handoverAgentsQuery(
  db: Db,
  handoverId: string,
  filters: { state?: HandoverAgentState },
): Knex.QueryBuilder {
  const query = db('handover_agents').select('*').where({ handover_id: handoverId });
  if (filters.state) query.where({ state: filters.state });
  return query;
}

/** The tenant's agents among `ids`, with their status (ids of no agent of the tenant are left out). */
export async function candidateAgents(
  db: Db,
  tenantId: string,
  ids: readonly string[],
): Promise<Array<{ id: string; status: AgentStatus }>> {
  return db('agents')
    .select('id', 'status')
    .where({ tenant_id: tenantId })
    .whereRaw('id = ANY(?::uuid[])', [ids as string[]]);
}

/** The group's agents that may be handed over, at most `limit` (the caller refuses more). */
export async function groupCandidateIds(db: Db, tenantId: string, groupId: string, limit: number): Promise<string[]> {
  return db('agents')
    .where({ tenant_id: tenantId, group_id: groupId })
    .whereNotIn('status', UNHANDABLE_STATUSES as AgentStatus[])
    .orderBy('id')
    .limit(limit)
    .pluck('id');
}

/** Which of `ids` are in a running handover already, with that handover's id. */
export async function agentsInRunningHandovers(
  db: Db,
  ids: readonly string[],
): Promise<Array<{ agent_id: string; handover_id: string }>> {
  return db('handover_agents')
    .select('agent_id', 'handover_id')
    .where({ active: true })
    .whereRaw('agent_id = ANY(?::uuid[])', [ids as string[]])
    .orderBy('agent_id');
}

export async function allHandoverAgentIds(db: Db, handoverId: string): Promise<string[]> {
  return db('handover_agents').where({ handover_id: handoverId }).orderBy('agent_id').pluck('agent_id');
}

export async function offeredAgentIds(db: Db, handoverId: string): Promise<string[]> {
  return db('handover_agents')
    .where({ handover_id: handoverId, state: 'offered' })
    .orderBy('agent_id')
    .pluck('agent_id');
}

export async function setHandoverOffer(
  db: Db,
  id: string,
  sealed: Pick<HandoverRow, 'offer_iv' | 'offer_tag' | 'offer_ciphertext'>,
): Promise<void> {
  await db('handovers')
    .where({ id })
    .update({ ...sealed, updated_at: db.fn.now() } as never);
}

/**
 * Offers the handover to its pending agents that are online now; the others are skipped
 * with why (an agent that came and went since the request, or was revoked meanwhile).
 * Returns the agents offered. Idempotent: only pending rows change.
 */
export async function offerToConnectedAgents(db: Db, handoverId: string): Promise<string[]> {
  const { rows } = await db.raw(
    `UPDATE handover_agents h
        SET state = CASE WHEN s.status = 'online' THEN 'offered' ELSE 'skipped' END,
            error = CASE WHEN s.status = 'online' THEN NULL
                         WHEN s.status IS NULL THEN 'the agent no longer exists'
                         ELSE 'not connected (' || s.status || ')' END,
            active = coalesce(s.status = 'online', false),
            updated_at = now()
       FROM (SELECT p.agent_id, a.status FROM handover_agents p LEFT JOIN agents a ON a.id = p.agent_id
              WHERE p.handover_id = ? AND p.state = 'pending') s
      WHERE h.handover_id = ? AND h.agent_id = s.agent_id
      RETURNING h.agent_id, h.state`,
    [handoverId, handoverId],
  );
  return (rows as Array<{ agent_id: string; state: HandoverAgentState }>)
    .filter((row) => row.state === 'offered')
    .map((row) => row.agent_id);
}

/**
 * The receiver has these agents now: those still offered become handed-over, here and in
 * their agent row (the gateway then cuts them off and admits them again only when a peer
 * hands them back), and their certificates of ours are revoked (a certificate is this
 * installation's word for an agent it no longer has). Returns the agents that changed (an
 * agent reported twice changes once).
 */
export async function markHandedOver(db: Db, handoverId: string, agentIds: readonly string[]): Promise<string[]> {
  const { rows } = await db.raw(
    `WITH moved AS (
       UPDATE handover_agents SET state = 'handed-over', active = false, error = NULL, updated_at = now()
        WHERE handover_id = ? AND state = 'offered' AND agent_id = ANY(?::uuid[])
        RETURNING agent_id
     ), certificates_revoked AS (
       UPDATE agent_certificates SET revoked_at = now()
        WHERE agent_id IN (SELECT agent_id FROM moved) AND revoked_at IS NULL
        RETURNING agent_id
     ), agents_moved AS (
       UPDATE agents SET status = 'handed-over', row_version = row_version + 1, updated_at = now(),
              certificate_revoked_at = CASE
                WHEN id IN (SELECT agent_id FROM certificates_revoked) THEN coalesce(certificate_revoked_at, now())
                ELSE certificate_revoked_at
              END
        WHERE id IN (SELECT agent_id FROM moved)
     )
     SELECT agent_id FROM moved ORDER BY agent_id`,
    [handoverId, agentIds as string[]],
  );
  return (rows as Array<{ agent_id: string }>).map((row) => row.agent_id);
}

/**
 * Compensation: every agent still offered stays here, `withdrawn` with why, or `missing` when
 * it is not connected and has not spoken here since it was offered the receiver (it reached
 * neither installation). Returns them all.
 */
export async function withdrawOffered(
  db: Db,
  handoverId: string,
  reasons: { withdrawn: string; missing: string },
): Promise<string[]> {
  const { rows } = await db.raw(
    `UPDATE handover_agents h
        SET state = CASE WHEN unseen THEN 'missing' ELSE 'withdrawn' END,
            error = CASE WHEN unseen THEN ? ELSE ? END,
            active = false, updated_at = now()
       FROM (SELECT h2.agent_id,
                    a.status IS DISTINCT FROM 'online' AND (a.last_seen_at IS NULL OR a.last_seen_at <= h2.updated_at) AS unseen
               FROM handover_agents h2 LEFT JOIN agents a ON a.id = h2.agent_id
              WHERE h2.handover_id = ? AND h2.state = 'offered') seen
      WHERE h.handover_id = ? AND h.agent_id = seen.agent_id AND h.state = 'offered'
      RETURNING h.agent_id`,
    [reasons.missing, reasons.withdrawn, handoverId, handoverId],
  );
  return (rows as Array<{ agent_id: string }>).map((row) => row.agent_id).sort();
}

/** A failed handover offered nothing: its pending agents are released, skipped with why. */
export async function skipPending(db: Db, handoverId: string, reason: string): Promise<void> {
  await db('handover_agents')
    .where({ handover_id: handoverId, state: 'pending' })
    .update({ state: 'skipped', active: false, error: reason, updated_at: db.fn.now() } as never);
}

/** Ends a running handover; undefined when it had ended already (a retried activity). */
export async function finishHandover(
  db: Db,
  id: string,
  state: Exclude<HandoverState, 'running'>,
  reason: string | null,
): Promise<HandoverRow | undefined> {
  const [row] = await db<HandoverRow>('handovers')
    .where({ id, state: 'running' })
    .update({ state, reason, finished_at: db.fn.now(), updated_at: db.fn.now() } as never)
    .returning('*');
  return row;
}

/** handoverCounts for a page of handovers, in one query. */
export async function handoverCountsOf(db: Db, handoverIds: readonly string[]): Promise<Map<string, HandoverCounts>> {
  const rows: Array<{ handover_id: string; state: HandoverAgentState; n: number }> = await db('handover_agents')
    .select('handover_id', 'state')
    .count({ n: '*' })
    .whereRaw('handover_id = ANY(?::uuid[])', [handoverIds as string[]])
    .groupBy('handover_id', 'state');
  const zeros = () => Object.fromEntries(HANDOVER_AGENT_STATES.map((state) => [state, 0])) as HandoverCounts;
  const counts = new Map(handoverIds.map((id) => [id, zeros()]));
  for (const row of rows) counts.get(row.handover_id)![row.state] = Number(row.n);
  return counts;
}
