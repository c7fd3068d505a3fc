/**
 * Sign-in to the operator console with the api as the backend for the frontend: the
 * authorization code flow with PKCE (openid-client) against Authentication:Oidc:Authority,
 * as the OIDC client Console:ClientId. The browser never holds a token: what a sign-in in
 * progress must remember (state, nonce, PKCE verifier, where to go back to) travels sealed
 * in a short-lived httpOnly cookie, and the ID token's claims become a server-side session.
 */
import * as client from 'openid-client';
import type { Settings } from '../../platform/settings';
import { decrypt, encrypt } from '../../platform/secrets';
import { problems } from '../problems';
import type { AppContext } from '../http/context';
import { claimAt, isLoopback, rolesFrom } from './oidc';
import { DEFAULT_TENANT, TENANT_ID } from './principal';
import type { SignedInPerson } from './console-session';

export const SIGN_IN_COOKIE = 'fleet_sign_in';
const SIGN_IN_MINUTES = 10;
const SEAL_CONTEXT = 'console-sign-in';

interface PendingSignIn {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
}

export interface ConsoleSignIn {
  /** Where to send the browser to sign in; remembers the attempt in a cookie. */
  begin(ctx: AppContext, returnTo: string): Promise<string>;
  /** The person the provider sent back (the callback's query), and where they were going. */
  complete(ctx: AppContext): Promise<{ person: SignedInPerson; returnTo: string }>;
  /** The provider's logout address for a signed-out person, if it has one. */
  endSessionUrl(): Promise<string | undefined>;
}

type OidcSettings = NonNullable<Settings['oidc']>;

export function createConsoleSignIn(
  oidc: OidcSettings,
  settings: Pick<Settings, 'console' | 'http'> & { key: Buffer },
): ConsoleSignIn {
  const { clientId, clientSecret, redirectUri } = settings.console;
  const authority = new URL(oidc.authority);
  let discovered: Promise<client.Configuration> | undefined;

  function configuration(): Promise<client.Configuration> {
    discovered ??= client
      .discovery(authority, clientId, clientSecret, clientSecret ? undefined : client.None(), {
        execute: authority.protocol === 'http:' && isLoopback(authority) ? [client.allowInsecureRequests] : [],
      })
      .catch((error: unknown) => {
        discovered = undefined;
        throw error;
      });
    return discovered.catch(() => {
      throw problems.unavailable('The identity provider cannot be reached to sign in.');
    });
  }

  function remember(ctx: AppContext, pending: PendingSignIn | null): void {
    let value: string | null = null;
    if (pending) {
      const sealed = encrypt(settings.key, JSON.stringify(pending), SEAL_CONTEXT);
      value = Buffer.concat([sealed.iv, sealed.tag, sealed.ciphertext]).toString('base64url');
    }
    ctx.cookies.set(SIGN_IN_COOKIE, value, {
      httpOnly: true,
      sameSite: 'lax', // sent on the provider's redirect back, a top-level navigation
      secure: ctx.secure,
      path: '/api/auth/callback',
      maxAge: pending ? SIGN_IN_MINUTES * 60_000 : undefined,
      overwrite: true,
    });
  }

  function recall(ctx: AppContext): PendingSignIn {
    const value = ctx.cookies.get(SIGN_IN_COOKIE);
    try {
      const raw = Buffer.from(value ?? '', 'base64url');
      const clear = decrypt(
        settings.key,
        { iv: raw.subarray(0, 12), tag: raw.subarray(12, 28), ciphertext: raw.subarray(28) },
        SEAL_CONTEXT,
      );
      return JSON.parse(clear.toString('utf8')) as PendingSignIn;
    } catch {
      throw problems.unauthorized(
        'No sign-in is in progress in this browser (it took longer than 10 minutes, or cookies are blocked). Sign in again.',
      );
    }
  }

  return {
    async begin(ctx, returnTo) {
      const config = await configuration();
      const verifier = client.randomPKCECodeVerifier();
      const pending: PendingSignIn = { state: client.randomState(), nonce: client.randomNonce(), verifier, returnTo };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid profile email',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      remember(ctx, pending);
      return url.href;
    },

    async complete(ctx) {
      const pending = recall(ctx);
      remember(ctx, null);
      const providerError = ctx.query.error;
      if (typeof providerError === 'string') {
        const description = ctx.query.error_description;
        throw problems.unauthorized(
          `The identity provider did not sign you in (${providerError}${typeof description === 'string' ? `: ${description}` : ''}).`,
        );
      }
      const config = await configuration();
      let claims: client.IDToken | undefined;
      try {
        // The address the provider sent the browser to: our redirect URI and its query
        // (behind a proxy the request's own URL may differ).
        const callback = new URL(redirectUri);
        callback.search = ctx.querystring;
        const tokens = await client.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
        claims = tokens.claims();
      } catch (error) {
        if (error instanceof client.ClientError || error instanceof client.ResponseBodyError) {
          throw problems.unauthorized(`The sign-in could not be completed (${(error as Error).message}).`);
        }
        throw problems.unavailable('The identity provider did not answer the sign-in.');
      }
      return { person: personOf(claims!, oidc), returnTo: pending.returnTo };
    },

    async endSessionUrl() {
      const config = await configuration().catch(() => undefined);
      if (!config?.serverMetadata().end_session_endpoint) return undefined;
      return client
        .buildEndSessionUrl(config, { client_id: clientId, post_logout_redirect_uri: settings.http.publicBaseUrl })
        .toString();
    },
  };
}

/** Who the ID token names, in which tenant, with which roles (the same claims the API reads). */
function personOf(claims: client.IDToken, oidc: OidcSettings): SignedInPerson {
  const tenant = claimAt(claims, oidc.tenantClaim) ?? DEFAULT_TENANT;
  if (typeof tenant !== 'string' || !TENANT_ID.test(tenant)) {
    throw problems.unauthorized(`The ID token's '${oidc.tenantClaim}' claim is not a valid tenant id.`);
  }
  const roles = rolesFrom(claimAt(claims, oidc.roleClaim));
  if (roles.length === 0) {
    throw problems.forbidden(`Your account carries no role this service knows in its '${oidc.roleClaim}' claim.`);
  }
  const display = claims.name ?? claims.preferred_username ?? claims.email;
  return {
    subject: claims.sub,
    displayName: typeof display === 'string' ? display.slice(0, 200) : undefined,
    tenantId: tenant,
    roles,
  };
}
