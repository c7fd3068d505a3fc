import type { Knex } from 'knex';
import type { Db } from '../connection';

export interface PatRow {
  id: string;
  tenant_id: string;
  name: string;
  token_hash: Buffer;
  role: string;
  allowed_endpoints: string[] | null;
  expires_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  created_by: string;
  created_at: Date;
}

export type NewPat = Pick<
  PatRow,
  'tenant_id' | 'name' | 'token_hash' | 'role' | 'allowed_endpoints' | 'expires_at' | 'created_by'
>;

export async function insertPat(db: Db, pat: NewPat): Promise<PatRow> {
  const [row] = await db<PatRow>('pats')
    .insert({
      ...pat,
      allowed_endpoints: pat.allowed_endpoints ? JSON.stringify(pat.allowed_endpoints) : null,
    } as never)
    .returning('*');
  return row!;
}

export async function findPatByHash(db: Db, hash: Buffer): Promise<PatRow | undefined> {
  return db<PatRow>('pats').where({ token_hash: hash }).first();
}

export async function findPat(db: Db, tenantId: string, id: string): Promise<PatRow | undefined> {
  return db<PatRow>('pats').where({ tenant_id: tenantId, id }).first();
}

/** Who issued the tenant's PAT of this name, if there is one. */
export async function findPatIssuer(
  db: Db,
  tenantId: string,
  name: string,
): Promise<Pick<PatRow, 'created_by'> | undefined> {
  return db('pats').select('created_by').where({ tenant_id: tenantId, name }).first();
}

export async function revokePat(db: Db, tenantId: string, id: string): Promise<PatRow | undefined> {
  const [row] = await db<PatRow>('pats')
    .where({ tenant_id: tenantId, id })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') } as never)
    .returning('*');
  return row;
}

/** PATs of every tenant, whatever their state. */
export async function countPats(db: Db): Promise<number> {
  const [row] = await db('pats').count({ n: '*' });
  return Number(row!.n);
}

export async function touchPat(db: Db, id: string): Promise<void> {
  await db('pats').where({ id }).update({ last_used_at: db.fn.now() });
}

export type PatState = 'active' | 'revoked' | 'expired';

export function listPatsQuery(
  db: Db,
  tenantId: string,
  filters: { role?: string; state?: PatState },
): Knex.QueryBuilder {
  const query = db('pats').select('*').where({ tenant_id: tenantId });
  if (filters.role) query.where({ role: filters.role });
  if (filters.state === 'revoked') query.whereNotNull('revoked_at');
  if (filters.state === 'expired') query.whereNull('revoked_at').where('expires_at', '<=', db.fn.now());
  if (filters.state === 'active') query.whereNull('revoked_at').where('expires_at', '>', db.fn.now());
  return query;
}
