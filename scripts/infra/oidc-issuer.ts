import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { consoleSignInConfiguration } from '../../scripts/dev/demo-oidc';
import { TEST_AUDIENCE, TEST_CONSOLE_REDIRECT } from './oidc-tokens';

/**
 * A real OpenID provider on loopback for tests and benchmarks. Each client stands for an
 * operator with one role in one tenant: client id `<tenant>.<role>`, secret `secret`.
 * Tokens are RS256 JWT access tokens from the client-credentials grant.
 */
export const TEST_ROLES = ['viewer', 'operator', 'auditor', 'admin', 'peer'] as const;
export const TEST_TENANTS = ['default', 'acme'] as const;
/** Extra clients: `default.expiring` (1 s tokens, admin) and `default.norole` (no role claim). */
const EXTRA_CLIENTS = ['default.expiring', 'default.norole', 'default.multi'];

function clientClaims(clientId: string): Record<string, unknown> {
  const [tenant, role] = clientId.split('.') as [string, string];
  const claims: Record<string, unknown> = {};
  // The default tenant is the one a token without a tenant claim belongs to.
  if (tenant !== 'default') claims.tenant = tenant;
  if (role === 'expiring') claims.roles = ['admin'];
  else if (role === 'multi') claims.roles = ['auditor', 'operator'];
  else if (role !== 'norole') claims.roles = [role];
  return claims;
}

export interface RunningIssuer {
  issuer: string;
  stop(): Promise<void>;
}

export async function startOidcIssuer(port = 0): Promise<RunningIssuer> {
  // Bound first (port 0: the system's choice), so the issuer's URL names the port it has:
  // a port chosen earlier and bound later could be taken meanwhile (the Temporal dev server
  // binds ports of its own choosing as it starts).
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientIds = [
    ...TEST_TENANTS.flatMap((tenant) => TEST_ROLES.map((role) => `${tenant}.${role}`)),
    ...EXTRA_CLIENTS,
  ];
  // Each issuer signs with a key of its own, as two real providers would.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
  // The console's client and the demo people (scripts/dev/demo-oidc.ts), signed in through
  // the provider's own development sign-in page.
  const { client: consoleClient, ...consoleSignIn } = consoleSignInConfiguration(
    [TEST_CONSOLE_REDIRECT],
    ['http://fleet.test'],
  );
  const provider = new Provider(issuer, {
    ...consoleSignIn,
    jwks: { keys: [signingKey] },
    clients: [
      ...clientIds.map((client_id) => ({
        client_id,
        client_secret: 'secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      })),
      consoleClient,
    ],
    features: {
      clientCredentials: { enabled: true },
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => TEST_AUDIENCE,
        // Any requested resource is accepted, so a test can ask for a wrong audience.
        getResourceServerInfo: (_ctx: unknown, resourceIndicator: string) => ({
          scope: 'api',
          audience: resourceIndicator,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
        }),
      },
    },
    ttl: {
      ClientCredentials: (_ctx: unknown, _token: unknown, client: { clientId: string }) =>
        client.clientId === 'default.expiring' ? 1 : 600,
    },
    extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) =>
      token.clientId ? clientClaims(token.clientId) : undefined,
  } as never);
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));
  return {
    issuer,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
