import type { Knex } from 'knex';
import type { Db } from '../connection';
import { activeTokensColumn } from './bootstrap-tokens';

export interface TokenPoolRow {
  id: string;
  tenant_id: string;
  name: string;
  group_id: string;
  token_ttl_seconds: number;
  token_max_uses: number;
  max_active_tokens: number;
  created_by: string;
  created_at: Date;
}

export async function insertTokenPool(db: Db, pool: Omit<TokenPoolRow, 'id' | 'created_at'>): Promise<TokenPoolRow> {
  const [row] = await db<TokenPoolRow>('token_pools')
    .insert(pool as never)
    .returning('*');
  return row!;
}

export async function findTokenPool(db: Db, tenantId: string, id: string): Promise<TokenPoolRow | undefined> {
  return db<TokenPoolRow>('token_pools').where({ tenant_id: tenantId, id }).first();
}

/** Locks the pool row until the transaction ends, so concurrent issues count one at a time. */
export async function lockTokenPool(
  trx: Knex.Transaction,
  tenantId: string,
  id: string,
): Promise<TokenPoolRow | undefined> {
  return trx<TokenPoolRow>('token_pools').where({ tenant_id: tenantId, id }).forUpdate().first();
}

export function listTokenPoolsQuery(db: Db, tenantId: string): Knex.QueryBuilder {
  return db('token_pools').select('token_pools.*', activeTokensColumn(db)).where({ tenant_id: tenantId });
}
