/**
 * Bootstrap-token pools: a pool issues tokens into one group with the same lifetime and uses,
 * up to a number active at once (for an installer that enrols hosts as they come). Creating
 * one announces `token-pool.created`, the pool as the API shows it; issuing from one counts
 * its active tokens under the pool's row lock, so concurrent issues never pass the maximum.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db/connection';
import { countActivePoolTokens, countIssuedPoolTokens, type BootstrapTokenRow } from '../../db/repos/bootstrap-tokens';
import { emitEvents } from '../../db/repos/events';
import { insertTokenPool, lockTokenPool, type TokenPoolRow } from '../../db/repos/token-pools';
import { DomainError, nameTaken, NotFoundError } from '../errors';
import { enrolmentGroup, issueBootstrapToken } from './bootstrap-tokens';

/** How a pool reads, in the API and in its events. */
export function tokenPoolView(row: TokenPoolRow, activeTokens: number) {
  return {
    id: row.id,
    name: row.name,
    groupId: row.group_id,
    tokenTtlSeconds: row.token_ttl_seconds,
    tokenMaxUses: row.token_max_uses,
    maxActiveTokens: row.max_active_tokens,
    activeTokens,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
  };
}

export interface NewTokenPool {
  tenantId: string;
  name: string;
  /** Omitted: the tenant's `default` group. */
  groupId?: string;
  tokenTtlSeconds: number;
  tokenMaxUses: number;
  maxActiveTokens: number;
  createdBy: string;
}

export async function createTokenPool(db: Db, pool: NewTokenPool): Promise<TokenPoolRow> {
  const row = await insertTokenPool(db, {
    tenant_id: pool.tenantId,
    name: pool.name,
    group_id: await enrolmentGroup(db, pool.tenantId, pool.groupId),
    token_ttl_seconds: pool.tokenTtlSeconds,
    token_max_uses: pool.tokenMaxUses,
    max_active_tokens: pool.maxActiveTokens,
    created_by: pool.createdBy,
  }).catch(nameTaken('token pool', pool.name));
  await emitEvents(db, [
    {
      tenantId: pool.tenantId,
      type: 'token-pool.created',
      source: '/api/tokens/pools',
      subject: row.id,
      data: tokenPoolView(row, 0),
    },
  ]);
  return row;
}

/**
 * Issues a token from a pool, refused while the pool has its maximum of active tokens. Its
 * name, when none is given, numbers every token the pool issued: a number is never given twice.
 */
export async function issueFromPool(
  trx: Knex.Transaction,
  request: { tenantId: string; poolId: string; name?: string; createdBy: string },
): Promise<{ row: BootstrapTokenRow; token: string }> {
  const pool = await lockTokenPool(trx, request.tenantId, request.poolId);
  if (!pool) throw new NotFoundError('token pool', request.poolId);
  const active = await countActivePoolTokens(trx, pool.id);
  if (active >= pool.max_active_tokens) {
    throw new DomainError(
      `Pool '${pool.name}' already has ${active} active tokens, its maximum; revoke one or wait for one to expire or be used up.`,
    );
  }
  return issueBootstrapToken(trx, {
    tenant_id: request.tenantId,
    name: request.name ?? `${pool.name} #${(await countIssuedPoolTokens(trx, pool.id)) + 1}`,
    group_id: pool.group_id,
    pool_id: pool.id,
    expires_at: new Date(Date.now() + pool.token_ttl_seconds * 1000),
    max_uses: pool.token_max_uses,
    created_by: request.createdBy,
  });
}
