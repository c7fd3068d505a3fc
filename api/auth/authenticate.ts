import type { Knex } from 'knex';
import { ensureTenant } from '../../db/repos/tenants';
import { problems } from '../problems';
import type { AppContext } from '../http/context';
import type { OidcVerifier } from './oidc';
import type { PatAuthenticator } from './pat-auth';
import type { Principal } from './principal';

const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * Turns `Authorization: Bearer <token>` into a principal: `svc-pat.` tokens are PATs,
 * anything else is an operator's OIDC token. The caller's tenant row is created on first
 * sight so every later write can reference it.
 */
export function createAuthenticator(db: Knex, pats: PatAuthenticator, oidc: OidcVerifier | undefined) {
  const knownTenants = new Set<string>();

  return async function authenticate(ctx: AppContext): Promise<Principal> {
    const match = BEARER.exec(ctx.get('authorization'));
    if (!match) throw problems.unauthorized();
    const token = match[1]!;
    let principal: Principal;
    if (token.startsWith('svc-pat.')) principal = await pats.authenticate(token);
    else if (oidc) principal = await oidc(token);
    else throw problems.unauthorized('Operator tokens are not accepted: no OIDC authority is configured.');
    if (!knownTenants.has(principal.tenantId)) {
      await ensureTenant(db, principal.tenantId);
      knownTenants.add(principal.tenantId);
    }
    return principal;
  };
}
