/**
 * Personal access tokens: issuing and revoking one, the same from the API, the operator CLI
 * (`npm run fleet -- create-pat`) and `npm run dev`'s first admin token, with one
 * `pat.created` / `pat.revoked` event shape whoever caused it. The token is shown once, to
 * the caller; only its SHA-256 is stored, and it is in no event.
 */
import { emitEvents } from '../../db/repos/events';
import { insertPat, revokePat as revokePatRow, type PatRow, type PatState } from '../../db/repos/pats';
import { ensureTenant, findTenant } from '../../db/repos/tenants';
import type { Db } from '../../db/connection';
import { nameTaken, NotFoundError } from '../errors';
import { generateToken, hashToken } from './secret-token';

const DAY_MS = 86_400_000;
const SOURCE = '/api/pats';

/** How a PAT reads, in the API and in its events (never its token). */
export function patView(row: PatRow) {
  const state: PatState = row.revoked_at ? 'revoked' : row.expires_at.getTime() <= Date.now() ? 'expired' : 'active';
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    allowedEndpoints: row.allowed_endpoints,
    state,
    expiresAt: row.expires_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
  };
}

export interface PatRequest {
  tenantId: string;
  name: string;
  /** Checked by the caller: a role that exists and that the issuer may hand on. */
  role: string;
  /** Checked by the caller against the routes; null: every call the role allows. */
  allowedEndpoints: string[] | null;
  /** Absent: the tenant's default lifetime, else `fallbackTtlDays`. */
  expiresInDays?: number;
  createdBy: string;
}

/**
 * Issues a PAT in the caller's transaction (the tenant's row is made when it is new, as for
 * a first sign-in) and announces it. A name taken in the tenant is refused.
 */
export async function issuePat(
  trx: Db,
  request: PatRequest,
  fallbackTtlDays: number,
): Promise<{ row: PatRow; token: string }> {
  await ensureTenant(trx, request.tenantId);
  const days =
    request.expiresInDays ?? (await findTenant(trx, request.tenantId))?.settings.patDefaultTtlDays ?? fallbackTtlDays;
  const token = generateToken('svc-pat');
  const row = await insertPat(trx, {
    tenant_id: request.tenantId,
    name: request.name,
    token_hash: hashToken(token),
    role: request.role,
    allowed_endpoints: request.allowedEndpoints,
    expires_at: new Date(Date.now() + days * DAY_MS),
    created_by: request.createdBy,
  }).catch(nameTaken('PAT', request.name));
  await emitEvents(trx, [
    { tenantId: request.tenantId, type: 'pat.created', source: SOURCE, subject: row.id, data: patView(row) },
  ]);
  return { row, token };
}

/** Revokes a PAT and announces it (revoking it again keeps its first revocation time). */
export async function revokePat(trx: Db, tenantId: string, id: string): Promise<PatRow> {
  const row = await revokePatRow(trx, tenantId, id);
  if (!row) throw new NotFoundError('PAT', id);
  await emitEvents(trx, [{ tenantId, type: 'pat.revoked', source: SOURCE, subject: row.id, data: patView(row) }]);
  return row;
}
