import type { Db } from '../../db/connection';
import { redeemBootstrapTokenHash, type Redemption } from '../../db/repos/bootstrap-tokens';
import { hashToken, isWellFormed } from './secret-token';

export type BootstrapRedemption = Redemption | { ok: false; reason: 'malformed' };

/**
 * For the agent gateway: spends one use of a bootstrap token, atomically (expiry, uses,
 * revocation). A token whose CRC fails is refused without a database look-up.
 */
export async function redeemBootstrapToken(db: Db, token: string): Promise<BootstrapRedemption> {
  if (!isWellFormed('svc-bt', token)) return { ok: false, reason: 'malformed' };
  return redeemBootstrapTokenHash(db, hashToken(token));
}
