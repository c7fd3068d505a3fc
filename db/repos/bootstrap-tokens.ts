import type { Knex } from 'knex';
import type { Db } from '../connection';

export interface BootstrapTokenRow {
  id: string;
  tenant_id: string;
  name: string;
  token_hash: Buffer;
  group_id: string;
  pool_id: string | null;
  expires_at: Date;
  max_uses: number;
  uses: number;
  revoked_at: Date | null;
  created_by: string;
  created_at: Date;
  /** A handover's token (receiver side): only these instance uids may enrol with it; null: any. */
  agent_ids: string[] | null;
}

export type NewBootstrapToken = Pick<
  BootstrapTokenRow,
  'tenant_id' | 'name' | 'token_hash' | 'group_id' | 'pool_id' | 'expires_at' | 'max_uses' | 'created_by'
> &
  Partial<Pick<BootstrapTokenRow, 'agent_ids'>>;

export type TokenState = 'active' | 'revoked' | 'expired' | 'exhausted';

/** SQL for "can still be redeemed"; the same condition guards redemption. */
const ACTIVE = 'revoked_at IS NULL AND expires_at > now() AND uses < max_uses';

export async function insertBootstrapToken(db: Db, token: NewBootstrapToken): Promise<BootstrapTokenRow> {
  const [row] = await db<BootstrapTokenRow>('bootstrap_tokens')
    .insert(token as never)
    .returning('*');
  return row!;
}

export async function findBootstrapToken(db: Db, tenantId: string, id: string): Promise<BootstrapTokenRow | undefined> {
  return db<BootstrapTokenRow>('bootstrap_tokens').where({ tenant_id: tenantId, id }).first();
}

/** A bootstrap token by hash, whatever its state (the gateway decides what each state admits). */
export async function findBootstrapTokenByHash(db: Db, hash: Buffer): Promise<BootstrapTokenRow | undefined> {
  return db<BootstrapTokenRow>('bootstrap_tokens').where({ token_hash: hash }).first();
}

export async function findBootstrapTokenById(db: Db, id: string): Promise<BootstrapTokenRow | undefined> {
  return db<BootstrapTokenRow>('bootstrap_tokens').where({ id }).first();
}

/**
 * The token's revocation, read FOR SHARE: waits for a revocation in flight, and holds off
 * one that comes later until the transaction ends.
 */
export async function shareLockBootstrapToken(
  db: Db,
  id: string,
): Promise<Pick<BootstrapTokenRow, 'revoked_at'> | undefined> {
  return db('bootstrap_tokens').select('revoked_at').where({ id }).forShare().first();
}

/** Whether the token admits this instance uid: a handover's token admits only the agents it lists. */
export function tokenAdmitsAgent(token: Pick<BootstrapTokenRow, 'agent_ids'>, agentId: string): boolean {
  return token.agent_ids === null || token.agent_ids.includes(agentId);
}

/** The incoming handover (receiver side) whose redemption issued this token, if any. */
export async function incomingHandoverIdOfToken(db: Db, tokenId: string): Promise<string | undefined> {
  const row = (await db('incoming_handovers').select('id').where({ bootstrap_token_id: tokenId }).first()) as
    { id: string } | undefined;
  return row?.id;
}

/** Which of `ids` are revoked tokens (one array parameter, however many). */
export async function revokedBootstrapTokenIds(db: Db, ids: string[]): Promise<string[]> {
  return db('bootstrap_tokens').whereRaw('id = ANY(?::uuid[])', [ids]).whereNotNull('revoked_at').pluck('id');
}

export async function revokeBootstrapToken(
  db: Db,
  tenantId: string,
  id: string,
): Promise<BootstrapTokenRow | undefined> {
  const [row] = await db<BootstrapTokenRow>('bootstrap_tokens')
    .where({ tenant_id: tenantId, id })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') } as never)
    .returning('*');
  return row;
}

export function listBootstrapTokensQuery(
  db: Db,
  tenantId: string,
  filters: { state?: TokenState; poolId?: string; groupId?: string },
): Knex.QueryBuilder {
  const query = db('bootstrap_tokens').select('*').where({ tenant_id: tenantId });
  if (filters.poolId) query.where({ pool_id: filters.poolId });
  if (filters.groupId) query.where({ group_id: filters.groupId });
  switch (filters.state) {
    case 'active':
      query.whereRaw(ACTIVE);
      break;
    case 'revoked':
      query.whereNotNull('revoked_at');
      break;
    case 'expired':
      query.whereNull('revoked_at').where('expires_at', '<=', db.fn.now());
      break;
    case 'exhausted':
      query.whereNull('revoked_at').where('expires_at', '>', db.fn.now()).whereRaw('uses >= max_uses');
      break;
  }
  return query;
}

export type Redemption =
  { ok: true; token: BootstrapTokenRow } | { ok: false; reason: 'unknown' | 'revoked' | 'expired' | 'exhausted' };

/**
 * Spends one use of a token, atomically: the conditions sit in the UPDATE itself, so of
 * concurrent redemptions of a single-use token exactly one matches a row. When none
 * matches, a second read tells the caller why.
 */
export async function redeemBootstrapTokenHash(db: Db, hash: Buffer): Promise<Redemption> {
  const [token] = await db<BootstrapTokenRow>('bootstrap_tokens')
    .where({ token_hash: hash })
    .whereRaw(ACTIVE)
    .update({ uses: db.raw('uses + 1') } as never)
    .returning('*');
  if (token) return { ok: true, token };
  const row = await findBootstrapTokenByHash(db, hash);
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.revoked_at) return { ok: false, reason: 'revoked' };
  if (row.expires_at.getTime() <= Date.now()) return { ok: false, reason: 'expired' };
  return { ok: false, reason: 'exhausted' };
}

/** Every token a pool has issued, whatever became of it (numbers its default names). */
export async function countIssuedPoolTokens(db: Db, poolId: string): Promise<number> {
  const [row] = await db('bootstrap_tokens').where({ pool_id: poolId }).count({ n: '*' });
  return Number(row!.n);
}

export async function countActivePoolTokens(db: Db, poolId: string): Promise<number> {
  const [row] = await db('bootstrap_tokens').where({ pool_id: poolId }).whereRaw(ACTIVE).count({ n: '*' });
  return Number(row!.n);
}

/** A pool's active tokens, as the `active_tokens` column of a query over `token_pools`. */
export function activeTokensColumn(db: Db): Knex.Raw {
  return db.raw(`(SELECT count(*) FROM bootstrap_tokens t
                WHERE t.pool_id = token_pools.id AND t.revoked_at IS NULL
                  AND t.expires_at > now() AND t.uses < t.max_uses)::int AS active_tokens`);
}
