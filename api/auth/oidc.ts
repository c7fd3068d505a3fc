import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import * as client from 'openid-client';
import { problems } from '../problems';
import type { Settings } from '../../platform/settings';
import { DEFAULT_TENANT, TENANT_ID, type Principal } from './principal';
import { isRole, permissionsOf, type Role } from './roles';

type OidcSettings = NonNullable<Settings['oidc']>;

const VERIFIED_CACHE_MS = 60_000;
const VERIFIED_CACHE_SIZE = 10_000;

const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** Plain-HTTP issuers are accepted only on loopback, where the traffic never leaves the host. */
export function isLoopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

export function claimAt(payload: JWTPayload, path: string): unknown {
  // Dotted paths reach nested claims, e.g. Keycloak's `realm_access.roles`.
  return path
    .split('.')
    .reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], payload);
}

export function rolesFrom(value: unknown): Role[] {
  const names = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  return names.filter(isRole);
}

function describeFailure(error: unknown): string {
  const { code, claim } = error as { code?: string; claim?: string };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'The token has expired.';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return claim === 'iss'
        ? 'The token was issued by an issuer this service does not trust.'
        : claim === 'aud'
          ? 'The token was issued for another audience.'
          : `The token's '${claim}' claim is invalid.`;
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'The token signature is invalid.';
    default:
      return 'The bearer token is not a valid token.';
  }
}

export type OidcVerifier = (token: string) => Promise<Principal>;

/**
 * Validates operator tokens against the issuer discovered from the authority: signature
 * against its JWKS (cached, refetched on an unknown key id), issuer, audience and expiry.
 * Discovery happens on first use and is retried after a failure, so the API starts even
 * while the identity provider is down (PATs keep working meanwhile).
 */
export function createOidcVerifier(settings: OidcSettings): OidcVerifier {
  const authority = new URL(settings.authority);
  let discovered: Promise<{ issuer: string; jwks: ReturnType<typeof createRemoteJWKSet> }> | undefined;

  function discover() {
    discovered ??= client
      .discovery(authority, settings.audience, undefined, undefined, {
        execute: authority.protocol === 'http:' && isLoopback(authority) ? [client.allowInsecureRequests] : [],
      })
      .then((configuration) => {
        const metadata = configuration.serverMetadata();
        if (!metadata.jwks_uri) throw new Error('the issuer publishes no jwks_uri');
        return { issuer: metadata.issuer, jwks: createRemoteJWKSet(new URL(metadata.jwks_uri)) };
      })
      .catch((error: unknown) => {
        discovered = undefined;
        throw error;
      });
    return discovered;
  }

  // A verified token's principal is remembered until the token expires (at most a minute),
  // so a client that reuses its token pays for the signature check once.
  const verified = new Map<string, { principal: Principal; until: number }>();

  return async function verifyOidcToken(token) {
    const hit = verified.get(token);
    if (hit && hit.until > Date.now()) return hit.principal;
    const principal = await verify(token);
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    verified.set(token, { principal, until: Math.min(principal.expiresAt, Date.now() + VERIFIED_CACHE_MS) });
    return principal;
  };

  async function verify(token: string): Promise<Principal & { expiresAt: number }> {
    let issuer: string;
    let jwks: ReturnType<typeof createRemoteJWKSet>;
    try {
      ({ issuer, jwks } = await discover());
    } catch {
      throw problems.unavailable('The identity provider cannot be reached to validate the token.');
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer,
        audience: settings.audience,
        algorithms: ASYMMETRIC,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      const code = (error as { code?: string }).code;
      // No answer (or nonsense) from the issuer's key endpoint says nothing about the token.
      if (code === undefined || code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JWKS_INVALID') {
        throw problems.unavailable('The identity provider’s signing keys cannot be fetched to validate the token.');
      }
      throw problems.unauthorized(describeFailure(error));
    }
    const tenantClaim = claimAt(payload, settings.tenantClaim);
    const tenantId = tenantClaim === undefined ? DEFAULT_TENANT : tenantClaim;
    if (typeof tenantId !== 'string' || !TENANT_ID.test(tenantId)) {
      throw problems.unauthorized(`The token's '${settings.tenantClaim}' claim is not a valid tenant id.`);
    }
    const roles = rolesFrom(claimAt(payload, settings.roleClaim));
    if (roles.length === 0) {
      throw problems.forbidden(`The token carries no role this service knows in its '${settings.roleClaim}' claim.`);
    }
    return {
      kind: 'oidc',
      id: payload.sub!,
      name: payload.sub!,
      tenantId,
      roles,
      permissions: permissionsOf(roles),
      expiresAt: payload.exp! * 1000,
    };
  }
}
