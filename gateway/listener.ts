/**
 * The agent port: OpAMP at `/v1/opamp` over WebSocket (binary frames, 0x00 header) and over
 * HTTP POST of `application/x-protobuf` (optionally gzip). TLS, with an optional client
 * certificate signed by the agents' CA (mTLS); or, behind proxies that end that TLS
 * (Agents:Tls:TerminatedBy), plain HTTP from them alone; plain TCP to anyone only in Development.
 *
 * No listen here (habit 1): `main.ts` calls `server.listen(...)` on `Agents:Listen`.
 */
import { X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { addressRanges, type AddressRanges } from '../platform/address-ranges';
import type { Settings } from '../platform/settings';
import type { AgentCa, ServerCertificate } from '../domain/certificates';
import { encryptionKey } from '../platform/secrets';
import { MIN_REISSUE_SECONDS } from './certificate-request';
import { OPAMP_MAX_MESSAGE_BYTES } from './codec';
import { checkClientCertificate } from './credentials';
import { FlapGuard } from './flapping';
import { requestHandler } from './http-transport';
import type { ListenerContext } from './listener-context';
import { createLookups } from './lookups';
import { ReportBatcher } from './report-batcher';
import { SessionStarts } from './session-starts';
import { AgentSessions } from './sessions';
import { rotateTicketKeys, SESSION_ID_CONTEXT, TICKET_PERIOD_SECONDS } from './session-tickets';
import { closeListener } from './shutdown';
import { SequenceTracker, sessionCloses } from './status';
import { upgradeHandler } from './websocket';

export { OPAMP_PATH } from './opamp-path';

export interface AgentListenerDeps {
  db: Knex;
  logger: Logger;
  settings: Readonly<Settings>;
  /** Verifies client certificates and signs agents' CSRs. */
  ca: AgentCa;
  /**
   * The listener's certificate; undefined: plain TCP, behind proxies that end agents' TLS
   * (Agents:Tls:TerminatedBy) or in Development (`Agents:Plaintext`).
   */
  tls?: ServerCertificate;
  /** For tests: how soon an agent may be issued another certificate (default MIN_REISSUE_SECONDS). */
  minReissueSeconds?: number;
}

export interface AgentListener {
  server: Server;
  sessions: AgentSessions;
  /** Starts the LISTEN connection and the liveness sweep; call before `server.listen`. */
  start(): Promise<void>;
  /** Closes every session (agents go offline), then the server. */
  close(): Promise<void>;
}

/** Builds the agent port: its sessions, its server with both transports, and its stop. */
export function createAgentListener(deps: AgentListenerDeps): AgentListener {
  const ctx = listenerContext(deps);
  const wss = new WebSocketServer({ noServer: true, maxPayload: OPAMP_MAX_MESSAGE_BYTES + 10 });
  const { server, stopTickets } = createAgentServer(ctx, deps, wss);
  return {
    server,
    sessions: ctx.sessions,
    start: () => ctx.sessions.start(),
    close: () => closeListener(ctx, server, wss).finally(() => stopTickets?.()),
  };
}

/** What the listener's parts share, built from its dependencies and settings. */
function listenerContext(deps: AgentListenerDeps): ListenerContext {
  const { db, ca, settings } = deps;
  const logger = deps.logger.child({ component: 'opamp' });
  const terminatedBy = settings.agents.tls.terminatedBy;
  const proxy =
    terminatedBy.length > 0
      ? { from: addressRanges(terminatedBy), ca: new X509Certificate(ca.certificatePem) }
      : undefined;
  const tls = deps.tls !== undefined || proxy !== undefined;
  const heartbeatSeconds = settings.agents.heartbeatSeconds;
  const flaps = new FlapGuard(db);
  return {
    db,
    logger,
    ca,
    tls,
    proxy,
    approval:
      settings.agents.enrollment.mode === 'approval' && tls
        ? { tenantId: settings.agents.enrollment.approvalTenant, maxPending: settings.agents.enrollment.maxPending }
        : undefined,
    heartbeatSeconds,
    certificateOptions: {
      ttlHours: settings.agents.certificateTtlHours,
      minReissueSeconds: deps.minReissueSeconds ?? MIN_REISSUE_SECONDS,
    },
    sequences: new SequenceTracker(),
    closed: sessionCloses(db),
    flaps,
    reports: new ReportBatcher(db, logger),
    starts: new SessionStarts(db, logger, flaps),
    lookups: createLookups(db),
    sessions: new AgentSessions(db, logger, {
      databaseUrl: settings.database.url,
      heartbeatSeconds,
      tls,
      // Handover offers (they carry a receiver's token) go only over TLS.
      offerKey: tls ? encryptionKey(settings) : undefined,
      ownCaPem: ca.certificatePem,
    }),
    pending: new Set(),
    closedByShutdown: new Set(),
    stopping: false,
    statusWrites: new Set(),
    certificateIdentity: new WeakMap(),
  };
}

/** ALPN: HTTP/1.1 when offered (WebSocket and OpAMP over HTTP), else none (the client's next choice). */
function selectHttp1({ protocols }: { protocols: string[] }): string | undefined {
  return protocols.includes('http/1.1') ? 'http/1.1' : undefined;
}

/**
 * The server of the agent port: TLS that asks for a client certificate, plain HTTP from the
 * proxies that end agents' TLS, or plain TCP (Development); with TLS, the stop of its ticket
 * keys' rotation.
 */
function createAgentServer(
  ctx: ListenerContext,
  deps: AgentListenerDeps,
  wss: WebSocketServer,
): { server: Server; stopTickets?: () => void } {
  const handleRequest = requestHandler(ctx);
  const tls = deps.tls;
  if (tls && ctx.proxy) throw new Error('the agent listener ends TLS itself or behind proxies that do, not both');
  if (!tls) {
    const server = createServer(handleRequest);
    if (ctx.proxy) {
      server.on('connection', onlyFrom(ctx.proxy.from, ctx.logger));
      // Longer than the proxy keeps an idle connection to us, so it never sends a request
      // on one we are closing (as api/main.ts does for the REST port).
      server.keepAliveTimeout = 65_000;
    }
    server.on('upgrade', upgradeHandler(ctx, wss));
    return { server };
  }
  const server = createTlsServer(
    {
      cert: tls.certificatePem,
      key: tls.keyPem,
      ca: ctx.ca.certificatePem,
      requestCert: true,
      // Agents without a certificate (enrolling with a token) are let through here and
      // judged per request; a certificate of another CA is refused in checkClientCertificate.
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      // Agents:Tls:Groups; none: OpenSSL's default groups (Node's 'auto').
      ecdhCurve: deps.settings.agents.tls.groups,
      // Resumption on any replica (session-tickets.ts): one context, keys by the period.
      sessionIdContext: SESSION_ID_CONTEXT,
      sessionTimeout: TICKET_PERIOD_SECONDS,
      // Node copies a server's ALPNProtocols (https: ['http/1.1'] by default) into every
      // socket as a slice of its shared buffer pool, which keeps a whole 8 KiB pool alive per
      // connection; a callback keeps nothing. HTTP/1.1 when the client offers it, as before;
      // a client offering only others gets no protocol instead of a fatal alert.
      ALPNCallback: selectHttp1,
    },
    handleRequest,
  );
  server.on('secureConnection', (socket: TLSSocket) => checkClientCertificate(ctx, socket));
  server.on('upgrade', upgradeHandler(ctx, wss));
  return { server, stopTickets: rotateTicketKeys(server, encryptionKey(deps.settings)) };
}

/** How often at most a refused peer is logged (with the count refused since the last line). */
const REFUSED_LOG_MS = 10_000;

/**
 * Behind proxies that end agents' TLS, a connection from any other address is closed before
 * it is read: only they can vouch for a client certificate. Refusals are logged at most
 * every REFUSED_LOG_MS, so a scan cannot flood the log.
 */
function onlyFrom(proxies: AddressRanges, logger: Logger): (socket: Socket) => void {
  let refused = 0;
  let loggedAt = -Infinity;
  return (socket) => {
    if (socket.remoteAddress !== undefined && proxies.holds(socket.remoteAddress)) return;
    socket.destroy();
    refused += 1;
    if (Date.now() - loggedAt < REFUSED_LOG_MS) return;
    logger.warn(
      { address: socket.remoteAddress, refused },
      'agent connection refused: not from a proxy in Agents:Tls:TerminatedBy',
    );
    loggedAt = Date.now();
    refused = 0;
  };
}
