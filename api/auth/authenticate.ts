import type { Knex } from 'knex';
import { ensureTenant } from '../../db/repos/tenants';
import { problems } from '../problems';
import type { AppContext } from '../http/context';
import type { ConsoleSessions } from './console-session';
import type { OidcVerifier } from './oidc';
import type { PatAuthenticator } from './pat-auth';
import type { Principal } from './principal';

const BEARER = /^Bearer +([^\s]+) *$/i;

export type TokenAuthenticator = (token: string) => Promise<Principal>;

/**
 * Turns a bearer token into a principal: `svc-pat.` tokens are PATs, anything else is an
 * operator's OIDC token. The caller's tenant row is created on first sight so every later
 * write can reference it.
 */
export function createTokenAuthenticator(
  db: Knex,
  pats: PatAuthenticator,
  oidc: OidcVerifier | undefined,
): TokenAuthenticator {
  const knownTenants = new Set<string>();

  return async function authenticateToken(token: string): Promise<Principal> {
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

/** The token of `Authorization: Bearer <token>`; undefined when the header is absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  return BEARER.exec(header ?? '')?.[1];
}

/**
 * A request's principal: from its `Authorization: Bearer <token>` header when it has one
 * (a bad header is never made up for by a cookie), else from the console's session cookie.
 */
export function createAuthenticator(authenticateToken: TokenAuthenticator, sessions?: ConsoleSessions) {
  return async function authenticate(ctx: AppContext): Promise<Principal> {
    const header = ctx.get('authorization');
    if (header) {
      const token = bearerToken(header);
      if (!token) throw problems.unauthorized();
      return authenticateToken(token);
    }
    const principal = await sessions?.authenticate(ctx);
    if (!principal) throw problems.unauthorized();
    return principal;
  };
}
