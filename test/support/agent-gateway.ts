/**
 * A real agent listener for tests, next to a test app (same database): TLS with a server
 * certificate from the agents' CA (the default), plain HTTP behind a TLS-ending proxy, or
 * plain TCP (Development) when asked.
 */
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import pino, { type Logger } from 'pino';
import { issueServerCertificate, loadOrCreateAgentCa, type AgentCa } from '../../domain/certificates';
import { createAgentListener, type AgentListener } from '../../gateway/listener';
import type { Settings } from '../../platform/settings';
import { randomUUID } from 'node:crypto';
import { testSettings, type TestApp } from './app';

export interface TestGateway {
  listener: AgentListener;
  ca: AgentCa;
  settings: Readonly<Settings>;
  /** ws:// or wss:// …/v1/opamp */
  wsUrl: string;
  /** http:// or https:// …/v1/opamp */
  httpUrl: string;
  close(): Promise<void>;
}

export async function startTestGateway(
  t: TestApp,
  options: {
    plaintext?: boolean;
    /** Agents:Tls:TerminatedBy: the listener takes plain HTTP from these proxies alone (e.g. '127.0.0.2'). */
    terminatedBy?: string;
    env?: Record<string, string>;
    minReissueSeconds?: number;
    /** Where the listener logs (default: nowhere). */
    logger?: Logger;
    /** The port to listen on (default: any free one), e.g. one the app already names as its Agents:PublicEndpoint. */
    port?: number;
    /** Another way to the app's database (default: the app's own pool), e.g. through a relay a test cuts. */
    database?: { db: Knex; url: string };
  } = {},
): Promise<TestGateway> {
  const database = options.database ?? t.database;
  const settings = testSettings(database.url, {
    Environment: 'Development',
    // The same key as the app's, so both read the one CA row.
    Secrets__EncryptionKey: t.settings.encryptionKey!.toString('base64'),
    ...(options.plaintext ? { Agents__Plaintext: 'true' } : {}),
    ...(options.terminatedBy ? { Agents__Tls__TerminatedBy: options.terminatedBy } : {}),
    ...options.env,
  });
  const ca = await loadOrCreateAgentCa(t.database.db, settings.encryptionKey!);
  const ownTls = !options.plaintext && !options.terminatedBy;
  const tls = ownTls ? await issueServerCertificate(ca, ['localhost', '127.0.0.1']) : undefined;
  const listener = createAgentListener({
    db: database.db,
    logger: options.logger ?? pino({ level: 'silent' }),
    settings,
    ca,
    tls,
    minReissueSeconds: options.minReissueSeconds,
  });
  await listener.start();
  await new Promise<void>((resolve) => listener.server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = listener.server.address() as AddressInfo;
  const secure = tls ? 's' : '';
  return {
    listener,
    ca,
    settings,
    wsUrl: `ws${secure}://127.0.0.1:${port}/v1/opamp`,
    httpUrl: `http${secure}://127.0.0.1:${port}/v1/opamp`,
    close: () => listener.close(),
  };
}

export interface IssuedToken {
  id: string;
  token: string;
  groupId: string;
}

/** A bootstrap token issued through the API (`POST /api/tokens`) with `operatorToken`. */
export async function issueBootstrapToken(
  t: TestApp,
  operatorToken: string,
  body: Record<string, unknown> = {},
): Promise<IssuedToken> {
  const res = await t.call('POST', '/api/tokens', {
    token: operatorToken,
    body: { name: `t-${randomUUID().slice(0, 8)}`, ...body },
  });
  if (res.status !== 201) throw new Error(`POST /api/tokens answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as IssuedToken;
}
