/**
 * Demo people and the console's OIDC client, for the identity provider `npm run dev` runs on
 * loopback and for the test suite's issuer: the same people sign in to the console in both.
 * Development only: the provider's built-in sign-in page takes any password.
 */
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Role } from '../../api/auth/roles';

export interface DemoUser {
  sub: string;
  name: string;
  role: Role;
}

/** Two admins, so two-person policy approval can be tried; one of every other role. */
export const DEMO_USERS: readonly DemoUser[] = [
  { sub: 'alice', name: 'Alice (admin)', role: 'admin' },
  { sub: 'bob', name: 'Bob (admin)', role: 'admin' },
  { sub: 'olivia', name: 'Olivia (operator)', role: 'operator' },
  { sub: 'victor', name: 'Victor (viewer)', role: 'viewer' },
  { sub: 'audrey', name: 'Audrey (auditor)', role: 'auditor' },
];

export const CONSOLE_CLIENT_ID = 'fleet-console';

/**
 * What an oidc-provider configuration needs for the console's sign-in: a public client
 * (PKCE, no secret) sent back to `redirectUris`, the demo accounts with their role in the ID
 * token, and no consent screen (the console is the installation's own first-party client).
 */
export function consoleSignInConfiguration(redirectUris: string[], postLogoutRedirectUris: string[]) {
  const users = new Map(DEMO_USERS.map((user) => [user.sub, user]));
  return {
    client: {
      client_id: CONSOLE_CLIENT_ID,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: redirectUris,
      post_logout_redirect_uris: postLogoutRedirectUris,
    },
    findAccount: (_ctx: unknown, sub: string) => {
      const user = users.get(sub);
      if (!user) return undefined;
      return {
        accountId: sub,
        claims: () => ({ sub, name: user.name, preferred_username: sub, roles: [user.role] }),
      };
    },
    claims: { openid: ['sub', 'roles'], profile: ['name', 'preferred_username'], email: ['email'] },
    conformIdTokenClaims: false,
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const { provider, client, session } = ctx.oidc;
      if (client?.clientId !== CONSOLE_CLIENT_ID || !session?.accountId) return undefined;
      const grant = new provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope('openid profile email');
      await grant.save();
      return grant;
    },
  };
}

export interface DemoIdentityProvider {
  issuer: string;
  stop(): Promise<void>;
}

/**
 * The identity provider `npm run dev` runs on loopback: the demo people sign in to the
 * console at `consoleUrl` through its development sign-in page (any password).
 */
export async function startDemoIdentityProvider(port: number, consoleUrl: string): Promise<DemoIdentityProvider> {
  const { default: Provider } = await import('oidc-provider');
  const { generateKeyPairSync, randomUUID } = await import('node:crypto');
  const issuer = `http://127.0.0.1:${port}`;
  const { client, ...signIn } = consoleSignInConfiguration([`${consoleUrl}/api/auth/callback`], [consoleUrl]);
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const provider = new Provider(issuer, {
    ...signIn,
    clients: [client],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' }] },
    features: { devInteractions: { enabled: true } },
  } as never);
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const listening = provider.listen(port, '127.0.0.1', () => resolve(listening));
  });
  return { issuer, stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
