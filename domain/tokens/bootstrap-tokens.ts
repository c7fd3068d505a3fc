import type { Db } from '../../db/connection';
import { notifyAgentCutoff } from '../../db/notify';
import {
  insertBootstrapToken,
  redeemBootstrapTokenHash,
  revokeBootstrapToken as revokeTokenRow,
  type BootstrapTokenRow,
  type NewBootstrapToken,
  type Redemption,
  type TokenState,
} from '../../db/repos/bootstrap-tokens';
import { emitEvents } from '../../db/repos/events';
import { ensureDefaultGroup, liveGroupIds } from '../../db/repos/groups';
import { NotFoundError } from '../errors';
import { generateToken, hashToken, isWellFormed } from './secret-token';

function stateOf(row: BootstrapTokenRow): TokenState {
  if (row.revoked_at) return 'revoked';
  if (row.expires_at.getTime() <= Date.now()) return 'expired';
  return row.uses >= row.max_uses ? 'exhausted' : 'active';
}

/** How a bootstrap token reads, in the API and in its events (never the token itself). */
export function bootstrapTokenView(row: BootstrapTokenRow) {
  return {
    id: row.id,
    name: row.name,
    groupId: row.group_id,
    poolId: row.pool_id,
    state: stateOf(row),
    expiresAt: row.expires_at.toISOString(),
    maxUses: row.max_uses,
    uses: row.uses,
    revokedAt: row.revoked_at?.toISOString() ?? null,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * Issues a bootstrap token and announces it (`bootstrap-token.issued`), the same for the
 * tokens API, a pool and a handover's receiver (whose token admits only the handed-over
 * agents). The token is returned once; only its hash is stored.
 */
export async function issueBootstrapToken(
  db: Db,
  fields: Omit<NewBootstrapToken, 'token_hash'>,
): Promise<{ row: BootstrapTokenRow; token: string }> {
  const token = generateToken('svc-bt');
  const row = await insertBootstrapToken(db, { ...fields, token_hash: hashToken(token) });
  await emitEvents(db, [
    {
      tenantId: row.tenant_id,
      type: 'bootstrap-token.issued',
      source: '/api/tokens',
      subject: row.id,
      data: bootstrapTokenView(row),
    },
  ]);
  return { row, token };
}

/** The group a token enrolls agents into: a live group of the tenant, or (none named) the tenant's `default` group. */
export async function enrolmentGroup(db: Db, tenantId: string, groupId: string | undefined): Promise<string> {
  if (!groupId) return (await ensureDefaultGroup(db, tenantId)).id;
  const id = groupId.toLowerCase(); // as the database spells uuids
  if (!(await liveGroupIds(db, tenantId, [id])).has(id)) throw new NotFoundError('group', id);
  return id;
}

/**
 * Revokes a bootstrap token and announces it (`bootstrap-token.revoked`), the same for the
 * tokens API and a handover's receiver: no agent enrols with it any more, and the sessions it
 * opened (agents not yet holding a certificate) are cut off on every replica.
 */
export async function revokeBootstrapToken(db: Db, tenantId: string, id: string): Promise<BootstrapTokenRow> {
  const row = await revokeTokenRow(db, tenantId, id);
  if (!row) throw new NotFoundError('bootstrap token', id);
  await emitEvents(db, [
    {
      tenantId,
      type: 'bootstrap-token.revoked',
      source: '/api/tokens',
      subject: row.id,
      data: bootstrapTokenView(row),
    },
  ]);
  await notifyAgentCutoff(db, { action: 'token-revoked', tokenId: row.id });
  return row;
}

export type BootstrapRedemption = Redemption | { ok: false; reason: 'malformed' };

/**
 * For the agent gateway: spends one use of a bootstrap token, atomically (expiry, uses,
 * revocation). A token whose CRC fails is refused without a database look-up.
 */
export async function redeemBootstrapToken(db: Db, token: string): Promise<BootstrapRedemption> {
  if (!isWellFormed('svc-bt', token)) return { ok: false, reason: 'malformed' };
  return redeemBootstrapTokenHash(db, hashToken(token));
}
