import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import pino, { type Logger } from 'pino';
import { createApp, type FleetApp } from '../../api/app';
import { httpServer } from '../../api/http/server';
import type { Role } from '../../api/auth/roles';
import { generateToken, hashToken } from '../../domain/tokens/secret-token';
import type { Client } from '@temporalio/client';
import type { Outbound } from '../../platform/outbound';
import { loadSettings, type Settings } from '../../platform/settings';
import { insertPat } from '../../db/repos/pats';
import { ensureTenant } from '../../db/repos/tenants';
import { createTestDatabase, type TestDatabase } from './database';
import { testInfra } from './infra-env';
import { fetchToken, TEST_AUDIENCE } from '../../scripts/infra/oidc-tokens';

export interface Call {
  token?: string;
  body?: unknown;
  /** Raw body text, sent as is (with `headers` choosing its content type). */
  raw?: string;
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

export interface TestApp {
  baseUrl: string;
  settings: Readonly<Settings>;
  database: TestDatabase;
  app: FleetApp;
  call(method: string, path: string, call?: Call): Promise<Reply>;
  /** An OIDC access token from the real test issuer for client `<tenant>.<role>`. */
  token(client: string): Promise<string>;
  /** A PAT written straight to the database, as `npm run fleet -- create-pat` does. */
  pat(
    role: Role,
    options?: { tenant?: string; allowedEndpoints?: string[]; name?: string; expiresAt?: Date },
  ): Promise<string>;
  close(): Promise<void>;
}

export function testSettings(databaseUrl: string, env: Record<string, string> = {}): Readonly<Settings> {
  const infra = testInfra();
  return loadSettings({
    Environment: 'Production',
    Database__Url: databaseUrl,
    Temporal__Address: infra.temporalAddress,
    Authentication__Oidc__Authority: infra.oidcIssuer,
    Authentication__Oidc__Audience: TEST_AUDIENCE,
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
    Http__PublicBaseUrl: 'http://fleet.test',
    Logging__Level: 'silent',
    // The suite's Git repositories are bare ones under the temporary directory, and its
    // Git servers and peers listen on loopback: both are refused without these.
    Git__FileRoots: tmpdir(),
    Outbound__Allow: '127.0.0.0/8',
    ...env,
  });
}

async function send(baseUrl: string, method: string, path: string, call: Call = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...call.headers };
  if (call.token) headers.authorization = `Bearer ${call.token}`;
  let body: string | undefined = call.raw;
  if (call.body !== undefined) {
    body = JSON.stringify(call.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(baseUrl + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if (/json/.test(response.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed };
}

/** `temporal`: a Temporal client for the routes that start and operate workflows (rollouts). */
export async function startTestApp(
  env: Record<string, string> = {},
  options: {
    temporal?: Client;
    /** Another replica on this app's database (which it does not drop). */
    replicaOf?: TestApp;
    /** Where the app logs (silent by default), for tests of what is logged. */
    logger?: Logger;
    /** The console build it serves (console/dist by default). */
    consoleDist?: string;
    /** Where it may call peers (the policy of its settings by default). */
    outbound?: Outbound;
  } = {},
): Promise<TestApp> {
  const database = options.replicaOf?.database ?? (await createTestDatabase());
  const settings = testSettings(database.url, env);
  const app = await createApp({
    settings,
    db: database.db,
    logger: options.logger ?? pino({ level: 'silent' }),
    temporal: options.temporal,
    consoleDist: options.consoleDist,
    outbound: options.outbound,
  });
  const server: Server = httpServer(app, settings.errorsBaseUrl);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tokens = new Map<string, string>();
  let pats = 0;
  return {
    baseUrl,
    settings,
    database,
    app,
    call: (method, path, call) => send(baseUrl, method, path, call),
    token: async (client) => {
      if (!tokens.has(client)) tokens.set(client, await fetchToken(testInfra().oidcIssuer, client));
      return tokens.get(client)!;
    },
    pat: async (role, options = {}) => {
      const tenant = options.tenant ?? 'default';
      await ensureTenant(database.db, tenant);
      const token = generateToken('svc-pat');
      await insertPat(database.db, {
        tenant_id: tenant,
        name: options.name ?? `test-${role}-${++pats}`,
        token_hash: hashToken(token),
        role,
        allowed_endpoints: options.allowedEndpoints ?? null,
        expires_at: options.expiresAt ?? new Date(Date.now() + 86_400_000),
        created_by: 'test',
      });
      return token;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
      if (!options.replicaOf) await database.drop();
    },
  };
}
