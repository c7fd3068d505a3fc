import type { Db } from '../connection';
import type { AgentStatus } from './agents';

/**
 * Receiver side of a handover (docs/federation.md): what a peer asked for, keyed by the
 * sender's handover id so a retried call finds it again. state: issued (a svc-ho token is
 * out) → redeemed (the bootstrap token for exactly its agents exists) → cancelled (the
 * sender gave up on every agent that had not arrived).
 */
export type IncomingHandoverState = 'issued' | 'redeemed' | 'cancelled';

export interface IncomingHandoverRow {
  id: string;
  tenant_id: string;
  requested_by: string;
  agent_ids: string[];
  token_hash: Buffer | null;
  token_expires_at: Date | null;
  redeemed_at: Date | null;
  bootstrap_token_id: string | null;
  state: IncomingHandoverState;
  deadline_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewIncomingHandover = Pick<
  IncomingHandoverRow,
  'id' | 'tenant_id' | 'requested_by' | 'agent_ids' | 'token_hash' | 'token_expires_at' | 'deadline_at'
>;

/** The row with this id in any tenant (ids are global), locked for the rest of the transaction. */
export async function lockIncomingHandover(db: Db, id: string): Promise<IncomingHandoverRow | undefined> {
  return db<IncomingHandoverRow>('incoming_handovers').where({ id }).forUpdate().first();
}

export async function findIncomingHandover(
  db: Db,
  tenantId: string,
  id: string,
): Promise<IncomingHandoverRow | undefined> {
  return db<IncomingHandoverRow>('incoming_handovers').where({ tenant_id: tenantId, id }).first();
}

export async function insertIncomingHandover(db: Db, row: NewIncomingHandover): Promise<IncomingHandoverRow> {
  const [inserted] = await db<IncomingHandoverRow>('incoming_handovers')
    .insert({ ...row, state: 'issued' } as never)
    .returning('*');
  return inserted!;
}

/** A retried request: a fresh token replaces the previous one (which stops working at once). */
export async function reissueIncomingToken(
  db: Db,
  id: string,
  token: Pick<IncomingHandoverRow, 'token_hash' | 'token_expires_at' | 'deadline_at'>,
): Promise<IncomingHandoverRow> {
  const [row] = await db<IncomingHandoverRow>('incoming_handovers')
    .where({ id, state: 'issued' })
    .update({ ...token, updated_at: db.fn.now() } as never)
    .returning('*');
  return row!;
}

/**
 * A sender that never got the redeem's answer asks again: the handover starts over with a
 * fresh token (issued, not redeemed, no bootstrap token; the caller revoked the old one).
 */
export async function restartIncomingHandover(
  db: Db,
  id: string,
  token: Pick<IncomingHandoverRow, 'token_hash' | 'token_expires_at' | 'deadline_at'>,
): Promise<IncomingHandoverRow> {
  const [row] = await db<IncomingHandoverRow>('incoming_handovers')
    .where({ id, state: 'redeemed' })
    .update({
      ...token,
      state: 'issued',
      redeemed_at: null,
      bootstrap_token_id: null,
      updated_at: db.fn.now(),
    } as never)
    .returning('*');
  return row!;
}

/**
 * Spends the single use of a handover token, atomically: the conditions sit in the UPDATE,
 * so of two concurrent redeems exactly one matches. Undefined: unknown, expired, of another
 * tenant, or spent (findIncomingByTokenHash tells which).
 */
export async function redeemIncomingToken(
  db: Db,
  tenantId: string,
  hash: Buffer,
): Promise<IncomingHandoverRow | undefined> {
  const [row] = await db<IncomingHandoverRow>('incoming_handovers')
    .where({ tenant_id: tenantId, token_hash: hash, state: 'issued' })
    .where('token_expires_at', '>', db.fn.now())
    .update({ state: 'redeemed', redeemed_at: db.fn.now(), updated_at: db.fn.now() } as never)
    .returning('*');
  return row;
}

export async function findIncomingByTokenHash(
  db: Db,
  tenantId: string,
  hash: Buffer,
): Promise<IncomingHandoverRow | undefined> {
  return db<IncomingHandoverRow>('incoming_handovers').where({ tenant_id: tenantId, token_hash: hash }).first();
}

export async function setIncomingBootstrapToken(db: Db, id: string, bootstrapTokenId: string): Promise<void> {
  await db('incoming_handovers')
    .where({ id })
    .update({ bootstrap_token_id: bootstrapTokenId } as never);
}

/** A handover not redeemed yet no longer names these agents (the sender cancelled them). */
export async function unlistIncomingAgents(db: Db, id: string, agentIds: readonly string[]): Promise<void> {
  await db.raw(
    `UPDATE incoming_handovers
        SET agent_ids = ARRAY(SELECT unnest(agent_ids) EXCEPT SELECT unnest(?::uuid[])), updated_at = now()
      WHERE id = ?`,
    [agentIds as string[], id],
  );
}

export async function setIncomingState(db: Db, id: string, state: IncomingHandoverState): Promise<void> {
  await db('incoming_handovers')
    .where({ id })
    .update({ state, updated_at: db.fn.now() } as never);
}

export interface IncomingAgent {
  id: string;
  /** The agent enrolled here with this handover's bootstrap token and has reported since. */
  enrolled: boolean;
  /** Its status here; null while it has not arrived. */
  status: AgentStatus | null;
  /** It authenticates with the handover's token (arrived, maybe not reported yet): cancelling it would lock it out. */
  bound: boolean;
}

/** Each agent the handover names, and whether it has arrived (in the handover's order). */
export async function incomingAgents(db: Db, row: IncomingHandoverRow): Promise<IncomingAgent[]> {
  const { rows } = await db.raw(
    `SELECT h.id, a.status,
            coalesce(a.tenant_id = ? AND a.enrolled_with_token_id = ? AND a.status IN ('online', 'offline'), false)
              AS enrolled,
            coalesce(a.tenant_id = ? AND a.enrolled_with_token_id = ?, false) AS bound
       FROM unnest(?::uuid[]) WITH ORDINALITY AS h(id, n)
       LEFT JOIN agents a ON a.id = h.id AND a.tenant_id = ?
      ORDER BY h.n`,
    [row.tenant_id, row.bootstrap_token_id, row.tenant_id, row.bootstrap_token_id, row.agent_ids, row.tenant_id],
  );
  return rows as IncomingAgent[];
}

/**
 * The handover's bootstrap token stops admitting these agents (it lists the instance uids it
 * admits, bootstrap_tokens.agent_ids). Returns how many it still admits.
 */
export async function unlistTokenAgents(db: Db, tokenId: string, agentIds: readonly string[]): Promise<number> {
  const { rows } = await db.raw(
    `UPDATE bootstrap_tokens
        SET agent_ids = ARRAY(SELECT unnest(agent_ids) EXCEPT SELECT unnest(?::uuid[]))
      WHERE id = ?
      RETURNING cardinality(agent_ids) AS admitted`,
    [agentIds as string[], tokenId],
  );
  return Number((rows as Array<{ admitted: number }>)[0]?.admitted ?? 0);
}
