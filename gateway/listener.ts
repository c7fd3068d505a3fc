/**
 * The agent port: OpAMP at `/v1/opamp` over WebSocket (binary frames, 0x00 header) and over
 * HTTP POST of `application/x-protobuf` (optionally gzip). TLS, with an optional client
 * certificate signed by the agents' CA (mTLS); plain TCP only in Development.
 *
 * No listen here (habit 1): `main.ts` calls `server.listen(...)` on `Agents:Listen`.
 */
import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Settings } from '../platform/settings';
import {
  CsrRejectedError,
  verifyAgentCertificate,
  verifyAuthorizedPeer,
  type AgentCa,
  type AgentIdentity,
  type CheckedCsr,
  type ServerCertificate,
} from '../domain/certificates';
import {
  acceptsGzip,
  decodeAgentToServer,
  decodeHttpBody,
  encodeHttpBody,
  encodeServerToAgent,
  frameWebSocket,
  OPAMP_MAX_MESSAGE_BYTES,
  OpampFrameError,
  unframeWebSocket,
  type AgentToServer,
} from './codec';
import { answerCertificateRequest, checkCertificateRequest, csrOf, MIN_REISSUE_SECONDS } from './certificate-request';
import {
  admitAgent,
  agentIdFromUid,
  checkCredential,
  tokenFromRequest,
  type Admitted,
  type ApprovalMode,
  type Credential,
  type RefusalReason,
} from './enrollment';
import { ReportBatcher } from './report-batcher';
import { AgentSessions, type AdoptedSession, type WsSession } from './sessions';
import { recordSettingsOffered, type ReportedAgent } from '../db/repos/agents';
import { encryptionKey } from '../platform/secrets';
import type { SettingsOffer } from './handover-offers';
import { FlapGuard } from './flapping';
import {
  applyRoutineStatus,
  applyStatus,
  replyTo,
  retryLaterReply,
  SequenceTracker,
  settingsDue,
  setOffline,
  setSessionsOffline,
  standingSettings,
} from './status';

export const OPAMP_PATH = '/v1/opamp';

export interface AgentListenerDeps {
  db: Knex;
  logger: Logger;
  settings: Readonly<Settings>;
  /** Verifies client certificates and signs agents' CSRs. */
  ca: AgentCa;
  /** The listener's certificate; undefined: plain TCP (Development only, `Agents:Plaintext`). */
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

/** WebSocket close codes (RFC 6455) for what an agent did wrong. */
const CLOSE = {
  goingAway: 1001,
  protocolError: 1002,
  unsupportedData: 1003,
  invalidPayload: 1007,
  policyViolation: 1008,
  tooBig: 1009,
  internalError: 1011,
  tryAgainLater: 1013,
} as const;

const FRAME_CLOSE: Record<OpampFrameError['reason'], number> = {
  'truncated-header': CLOSE.protocolError,
  'bad-header': CLOSE.protocolError,
  'too-large': CLOSE.tooBig,
  'bad-protobuf': CLOSE.invalidPayload,
  'bad-gzip': CLOSE.invalidPayload,
  'unsupported-encoding': CLOSE.invalidPayload,
};

const FRAME_STATUS: Record<OpampFrameError['reason'], number> = {
  'truncated-header': 400,
  'bad-header': 400,
  'too-large': 413,
  'bad-protobuf': 400,
  'bad-gzip': 400,
  'unsupported-encoding': 415,
};

type Refusal =
  | { reason: RefusalReason | 'bad-csr'; detail?: string }
  /** The agent opens sessions in a loop: it should come back after `retryAfterSeconds`. */
  | { reason: 'flapping'; retryAfterSeconds: number }
  /** The listener is stopping: its WebSocket agents are offline and told to go elsewhere. */
  | { reason: 'stopping' };

const tryLater = (reason: Refusal['reason']) => reason === 'too-many-pending' || reason === 'flapping';
const refusalStatus = ({ reason }: Refusal) =>
  reason === 'bad-uid' || reason === 'bad-csr' ? 400 : tryLater(reason) ? 503 : 401;
const refusalClose = ({ reason }: Refusal) =>
  reason === 'bad-uid' ? CLOSE.invalidPayload : tryLater(reason) ? CLOSE.tryAgainLater : CLOSE.policyViolation;
/** What the agent is told: a uid a handover's token does not list is answered as an unknown token is. */
const refusalText = (refusal: Refusal) =>
  refusal.reason === 'uid-not-listed'
    ? 'refused: unknown'
    : refusal.reason === 'bad-uid'
      ? 'instance uid must be 16 bytes'
      : refusal.reason === 'bad-csr'
        ? `CSR refused: ${refusal.detail}`
        : refusal.reason === 'flapping'
          ? `flapping: retry after ${refusal.retryAfterSeconds} s`
          : `refused: ${refusal.reason}`;

/**
 * Who a refusal is about, for the log: the agent id, or the instance uid (hex) when it is not
 * one. Never the credential: a token is named by its id, not its value.
 */
function refusedAgent(message: AgentToServer | undefined, credential?: Credential) {
  const agentId = message && agentIdFromUid(message.instanceUid);
  const instanceUid = message && !agentId ? Buffer.from(message.instanceUid).toString('hex') : undefined;
  const tokenId = credential?.kind === 'token' ? credential.row.id : undefined;
  const certificateAgent = credential?.kind === 'certificate' ? credential.identity.agentId : undefined;
  return { agentId: agentId ?? certificateAgent, instanceUid, tokenId };
}

export function createAgentListener(deps: AgentListenerDeps): AgentListener {
  const { db, ca, settings } = deps;
  const logger = deps.logger.child({ component: 'opamp' });
  const tls = deps.tls !== undefined;
  const heartbeatSeconds = settings.agents.heartbeatSeconds;
  const approval: ApprovalMode | undefined =
    settings.agents.enrollment.mode === 'approval' && tls
      ? { tenantId: settings.agents.enrollment.approvalTenant, maxPending: settings.agents.enrollment.maxPending }
      : undefined;
  const certificateOptions = {
    ttlHours: settings.agents.certificateTtlHours,
    minReissueSeconds: deps.minReissueSeconds ?? MIN_REISSUE_SECONDS,
  };
  const sequences = new SequenceTracker();
  const flaps = new FlapGuard(db);
  const reports = new ReportBatcher(db, logger);
  const sessions = new AgentSessions(db, logger, {
    databaseUrl: settings.database.url,
    heartbeatSeconds,
    tls,
    // Handover offers (they carry a receiver's token) go only over TLS.
    offerKey: tls ? encryptionKey(settings) : undefined,
  });
  /** Offline updates still running, so close() can wait for them. */
  const pending = new Set<Promise<unknown>>();
  /** Sessions that `close()` marks offline all at once: their own close leaves that alone. */
  const closedByShutdown = new Set<string>();
  /** Set by `close()`: an upgrade still being checked is refused, a message in flight writes no status. */
  let stopping = false;
  /** Messages' transactional status writes under way: a stop marks its agents offline after them. */
  const statusWrites = new Set<Promise<unknown>>();
  /** The agent a TLS connection's client certificate names (checked once per connection). */
  const certificateIdentity = new WeakMap<TLSSocket, Promise<AgentIdentity | undefined>>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: OPAMP_MAX_MESSAGE_BYTES + 10 });

  const writingStatus = <T>(write: Promise<T>): Promise<T> => {
    const settled: Promise<unknown> = write.catch(() => undefined).finally(() => statusWrites.delete(settled));
    statusWrites.add(settled);
    return write;
  };

  const track = (work: Promise<unknown>) => {
    const tracked = work
      .catch((error) => logger.error({ err: error }, 'opamp background update failed'))
      .finally(() => pending.delete(tracked));
    pending.add(tracked);
  };

  // -------------------------------------------------------------------------------------
  // Credentials

  /** A client certificate wins over a token; no credential at all is for approval mode. */
  async function credentialOf(
    req: IncomingMessage,
  ): Promise<{ ok: true; credential: Credential } | { ok: false; reason: string; tokenId?: string }> {
    const identity = await certificateIdentity.get(req.socket as TLSSocket);
    if (identity) return { ok: true, credential: { kind: 'certificate', identity } };
    if (req.socket.destroyed) return { ok: false, reason: 'certificate refused' };
    const token = tokenFromRequest(req);
    if (token === undefined && approval) return { ok: true, credential: { kind: 'none' } };
    return checkCredential(db, token);
  }

  /** At the handshake: a certificate of another CA closes the connection; ours is mapped to its agent. */
  function onSecureConnection(socket: TLSSocket) {
    const peer = socket.getPeerCertificate();
    if (!peer?.raw) return;
    // Our leaves name their agent in the CN; another CA's name only its holder's claim.
    const claimed = { agentId: peer.subject?.CN, serial: peer.serialNumber };
    if (!socket.authorized) {
      logger.info({ ...claimed, reason: socket.authorizationError }, 'agent certificate refused at the handshake');
      socket.destroy();
      return;
    }
    // OpenSSL has checked chain and validity; the full check runs only for what the fast one cannot read.
    const identity = verifyAuthorizedPeer(db, peer)
      .then((found) => found ?? verifyAgentCertificate(db, ca, peer.raw))
      .then(
        (found) => {
          sessions.trackCertificateSocket(found.agentId, socket);
          return found;
        },
        (error: Error) => {
          logger.info(
            { ...claimed, reason: (error as { reason?: string }).reason ?? error.message },
            'agent certificate refused',
          );
          socket.destroy();
          return undefined;
        },
      );
    certificateIdentity.set(socket, identity);
  }

  // -------------------------------------------------------------------------------------
  // One message, either transport

  interface Served {
    ok: true;
    agentId: string;
    admission: Admitted;
    pending: boolean;
    reply: ReturnType<typeof replyTo>;
  }

  async function serve(
    credential: Credential,
    message: AgentToServer,
    transport: 'websocket' | 'http',
    session: {
      /** The WebSocket session's id; none over HTTP. */
      id?: string;
      newSession: boolean;
      sentHash: string | undefined;
      remember(hash: string): void;
      /** A WebSocket is admitted once: its credential and uid cannot change, and cut-offs close it. */
      admitted?: Admitted;
    },
  ): Promise<Served | ({ ok: false } & Refusal)> {
    // A bad CSR is refused before anything of the message is stored.
    const csrBytes = tls ? csrOf(message) : undefined;
    let csr: CheckedCsr | undefined;
    if (csrBytes) {
      const uid = agentIdFromUid(message.instanceUid);
      if (!uid) return { ok: false, reason: 'bad-uid' };
      try {
        csr = await checkCertificateRequest(csrBytes, uid);
      } catch (error) {
        if (error instanceof CsrRejectedError) return { ok: false, reason: 'bad-csr', detail: error.message };
        throw error;
      }
    }
    if (!session.admitted) {
      // An agent in a back-off costs nothing more than this look-up until it ends.
      const retryAfterSeconds = flaps.retryAfter(agentIdFromUid(message.instanceUid));
      if (retryAfterSeconds !== undefined) return { ok: false, reason: 'flapping', retryAfterSeconds };
    }
    const admission = session.admitted ?? (await admitAgent(db, credential, message.instanceUid, transport, approval));
    if (!admission.ok) return admission;
    const { agentId, tenantId, pending: held } = admission;
    if (session.newSession) {
      const retryAfterSeconds = await flaps.sessionStarted(agentId, tenantId);
      if (retryAfterSeconds !== undefined) return { ok: false, reason: 'flapping', retryAfterSeconds };
    }
    const reportFullState =
      sequences.record(agentId, message.sequenceNum, message.agentDescription !== undefined) && !admission.enrolled;
    const replyOptions = { tls, reportFullState };
    if (message.agentDisconnect && transport === 'http') {
      await setOffline(db, agentId, 'agent-disconnect');
      sequences.forget(agentId);
      return { ok: true, agentId, admission, pending: held, reply: replyTo(message, replyOptions) };
    }
    const routine = !session.newSession && !held && !admission.enrolled && !message.agentDescription;
    const batched = routine ? await applyRoutineStatus(reports, agentId, message) : undefined;
    // A stopping replica has marked its WebSocket agents offline (or is about to): a message
    // still in flight must not bring one back online.
    if (!batched && stopping && transport === 'websocket') return { ok: false, reason: 'stopping' };
    const reported =
      batched ??
      (await writingStatus(
        applyStatus(db, agentId, message, {
          newSession: session.newSession,
          transport,
          pending: held,
          session: session.id,
        }),
      ));
    if (!reported) return { ok: false, reason: 'unknown-agent' }; // the row is gone
    if (reported.cutOff) return { ok: false, reason: 'agent-revoked' };
    const tokenId = credential.kind === 'token' ? credential.row.id : undefined;
    const certificate =
      csr && !held
        ? await answerCertificateRequest(db, ca, certificateOptions, { tenantId, agentId, tokenId }, csr)
        : undefined;
    const remoteConfig = held
      ? undefined
      : await sessions.remoteConfigFor(agentId, reported.desired, reported.applied, session.sentHash);
    if (remoteConfig && reported.desired) session.remember(reported.desired.hash);
    const settings = await settingsToOffer(agentId, reported, certificate !== undefined);
    if (admission.enrolled)
      logger.info({ agentId, transport, pending: held }, held ? 'agent held for approval' : 'agent enrolled');
    if (certificate) logger.info({ agentId }, 'agent certificate issued');
    return {
      ok: true,
      agentId,
      admission,
      pending: held,
      reply: replyTo(message, { ...replyOptions, remoteConfig, certificate, settings }),
    };
  }

  /**
   * The connection settings a reply carries (docs/agent-gateway.md, Connection settings).
   * Settings go with a certificate too, an offer being the whole of the agent's settings: the
   * standing ones, a handover's offer waiting for the next reply.
   */
  async function settingsToOffer(
    agentId: string,
    reported: ReportedAgent,
    withCertificate: boolean,
  ): Promise<SettingsOffer | undefined> {
    if (!withCertificate) return sessions.settingsDue(agentId, reported.capabilities, reported.settings);
    const standing = standingSettings(reported.capabilities, heartbeatSeconds);
    if (sessions.handovers.wanted(agentId, standing) === standing && settingsDue(standing, reported.settings))
      await recordSettingsOffered(db, agentId, standing.hash);
    return standing;
  }

  // -------------------------------------------------------------------------------------
  // WebSocket

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', () => socket.destroy());
    if (pathOf(req) !== OPAMP_PATH) return rejectUpgrade(socket, 404, 'Not Found');
    const checked = await credentialOf(req);
    // The close frames may have gone out while this was checked: the agent goes elsewhere.
    if (stopping) return rejectUpgrade(socket, 503, 'Service Unavailable');
    if (!checked.ok) {
      // No message yet, so no uid: the agent is whoever holds that certificate or token.
      logger.info(
        { tokenId: checked.tokenId, reason: checked.reason, transport: 'websocket' },
        'agent connection refused',
      );
      return rejectUpgrade(socket, 401, 'Unauthorized', 'WWW-Authenticate: Bearer\r\n');
    }
    wss.handleUpgrade(req, socket, head, (ws) => runSession(ws, checked.credential));
  }

  function runSession(ws: WebSocket, credential: Credential) {
    let queue = Promise.resolve();
    const session: WsSession = {
      id: randomUUID(),
      ws,
      credential,
      pending: false,
      alive: true,
      run(work) {
        // One message at a time per agent, in order (sequence numbers, row updates, pushes).
        queue = queue.then(work).catch((error) => {
          logger.error({ err: error, agentId: session.agentId }, 'opamp message failed');
          if (ws.readyState === ws.OPEN) ws.close(CLOSE.internalError, 'internal error');
        });
      },
    };
    /** `refusal`: why, for the log, when the agent is told less (see refusalText). */
    const refuse = (code: number, reason: string, message?: AgentToServer, refusal?: string) => {
      const agent = session.agentId ? { agentId: session.agentId } : refusedAgent(message, credential);
      logger.info({ ...agent, code, reason, refusal }, 'agent session closed by the server');
      ws.close(code, reason.slice(0, 120));
    };

    async function onMessage(data: RawData, isBinary: boolean) {
      if (ws.readyState !== ws.OPEN) return;
      if (!isBinary) return refuse(CLOSE.unsupportedData, 'OpAMP messages are binary');
      let message: AgentToServer;
      try {
        message = decodeAgentToServer(unframeWebSocket(toBuffer(data)));
      } catch (error) {
        if (error instanceof OpampFrameError) return refuse(FRAME_CLOSE[error.reason], error.message);
        throw error;
      }
      const uid = agentIdFromUid(message.instanceUid);
      if (session.agentId && uid !== session.agentId)
        return refuse(CLOSE.policyViolation, 'instance uid changed within the session', message);
      const served = await serve(credential, message, 'websocket', {
        id: session.id,
        newSession: session.agentId === undefined,
        sentHash: session.sentHash,
        remember: (hash) => (session.sentHash = hash),
        admitted: session.admitted,
      });
      if (!served.ok) {
        if (served.reason === 'stopping') return; // the close frame is on its way
        if (served.reason === 'flapping')
          ws.send(frameWebSocket(encodeServerToAgent(retryLaterReply(message, served.retryAfterSeconds, 'flapping'))));
        return refuse(refusalClose(served), refusalText(served), message, served.reason);
      }
      session.pending = served.pending;
      session.admitted = { ...served.admission, enrolled: false };
      if (!session.agentId) {
        session.agentId = served.agentId;
        session.uid = message.instanceUid;
        const adopted = session as AdoptedSession;
        sessions.adopt(adopted);
        // A cut-off committed while this message was served found no session to close. The
        // message is done either way: should the re-check fail, its reply still goes out
        // (notifications and the resync after a lost LISTEN remain).
        await sessions
          .recheck([adopted])
          .catch((error: unknown) => logger.warn({ err: error, agentId: adopted.agentId }, 'session re-check failed'));
      }
      if (ws.readyState === ws.OPEN) ws.send(frameWebSocket(encodeServerToAgent(served.reply)));
    }

    ws.on('message', (data, isBinary) => session.run(() => onMessage(data, isBinary)));
    ws.on('pong', () => (session.alive = true));
    ws.on('error', (error) => logger.info({ err: error, agentId: session.agentId }, 'agent socket error'));
    ws.on('close', (code) => {
      if (!sessions.release(session)) return;
      const id = session.agentId!;
      sequences.forget(id);
      // A held agent was never online: its close changes nothing (approval closes it on purpose).
      // Only while this session speaks for the agent: it may have reconnected to another replica.
      if (!session.pending && !closedByShutdown.has(session.id))
        track(queue.then(() => setOffline(db, id, `websocket closed (${code})`, session.id)));
    });
  }

  // -------------------------------------------------------------------------------------
  // HTTP

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    if (pathOf(req) !== OPAMP_PATH) return reply(res, 404, 'not found');
    if (req.method !== 'POST')
      return reply(res, 405, 'POST application/x-protobuf, or a WebSocket upgrade', { allow: 'POST' });
    const checked = await credentialOf(req);
    if (!checked.ok) {
      logger.info({ tokenId: checked.tokenId, reason: checked.reason, transport: 'http' }, 'agent request refused');
      if (req.socket.destroyed) return;
      return reply(res, 401, 'unauthorized', { 'www-authenticate': 'Bearer' });
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-protobuf') return reply(res, 415, 'Content-Type must be application/x-protobuf');
    const body = await readBody(req, OPAMP_MAX_MESSAGE_BYTES);
    if (!body) return reply(res, 413, 'message too large');
    let message: AgentToServer;
    try {
      message = decodeAgentToServer(decodeHttpBody(body, header(req, 'content-encoding')));
    } catch (error) {
      if (error instanceof OpampFrameError) return reply(res, FRAME_STATUS[error.reason], error.message);
      throw error;
    }
    const agentKey = agentIdFromUid(message.instanceUid) ?? '';
    const served = await serve(checked.credential, message, 'http', {
      newSession: false,
      sentHash: sessions.httpSent.get(agentKey),
      remember: (hash) => sessions.httpSent.set(agentKey, hash),
    });
    if (!served.ok) {
      logger.info(
        { ...refusedAgent(message, checked.credential), reason: served.reason, transport: 'http' },
        'agent request refused',
      );
      const retryAfter: Record<string, string> =
        served.reason === 'flapping' ? { 'retry-after': String(served.retryAfterSeconds) } : {};
      return reply(res, refusalStatus(served), refusalText(served), retryAfter);
    }
    const out = encodeHttpBody(encodeServerToAgent(served.reply), acceptsGzip(header(req, 'accept-encoding')));
    res.writeHead(200, {
      'content-type': 'application/x-protobuf',
      'content-length': out.body.length,
      ...(out.contentEncoding ? { 'content-encoding': out.contentEncoding } : {}),
    });
    res.end(out.body);
  }

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    onRequest(req, res).catch((error) => {
      logger.error({ err: error }, 'opamp request failed');
      if (!res.headersSent) reply(res, 500, 'internal error');
      else res.destroy();
    });
  };
  const server: Server = deps.tls
    ? createTlsServer(
        {
          cert: deps.tls.certificatePem,
          key: deps.tls.keyPem,
          ca: ca.certificatePem,
          requestCert: true,
          // Agents without a certificate (enrolling with a token) are let through here and
          // judged per request; a certificate of another CA is refused in onSecureConnection.
          rejectUnauthorized: false,
          minVersion: 'TLSv1.2',
        },
        handle,
      )
    : createServer(handle);
  if (deps.tls) server.on('secureConnection', onSecureConnection);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(req, socket, head).catch((error) => {
      logger.error({ err: error }, 'opamp upgrade failed');
      rejectUpgrade(socket, 503, 'Service Unavailable');
    });
  });

  return {
    server,
    sessions,
    start: () => sessions.start(),
    /**
     * Agents go at once (1001, going away) and reconnect to another replica: their sockets are
     * let go as soon as the close frame has left, without waiting for their closing handshakes.
     * Their rows are marked offline by one transaction, started first so that Postgres works
     * while the frames go out. New connections are refused; HTTP requests in flight are answered.
     */
    async close() {
      stopping = true;
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const adopted = [...sessions.byAgent.values()].filter((session) => !session.pending);
      for (const session of adopted) closedByShutdown.add(session.id);
      // After the status writes already under way (one landing later would bring its agent back online).
      const offline = Promise.all([...statusWrites])
        .then(() =>
          setSessionsOffline(
            db,
            adopted.map((session) => ({ agentId: session.agentId, sessionId: session.id })),
            `websocket closed (${CLOSE.goingAway})`,
          ),
        )
        .catch((error: unknown) => logger.error({ err: error }, 'marking agents offline at shutdown failed'));
      await sayGoingAway([...wss.clients]);
      await offline;
      await Promise.all([...pending]);
      await sessions.close();
      wss.close();
      // An HTTP request still in flight after the agents are gone has had its time.
      const stragglers = setTimeout(() => server.closeAllConnections(), HTTP_STRAGGLER_MS);
      await serverClosed;
      clearTimeout(stragglers);
    },
  };
}

function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? '/', 'http://agent').pathname;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

function reply(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(`${text}\n`);
}

function rejectUpgrade(socket: Duplex, status: number, text: string, extraHeaders = '') {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n${extraHeaders}\r\n`);
}

/** The body, or undefined once it passes `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** How long an HTTP request in flight has to finish when the listener stops. */
const HTTP_STRAGGLER_MS = 1000;

/**
 * Close frames go out this many at a time: between slices the event loop turns, so the
 * offline transaction's statements reach Postgres while the rest of the frames are sent.
 */
const GOING_AWAY_SLICE = 500;

/** How long a socket whose close frame cannot leave (a peer that reads nothing) is kept. */
const GOING_AWAY_GRACE_MS = 1000;

/**
 * Tells every client 1001 (going away) and lets go of each socket as soon as its close frame
 * has left: the agent has all it needs to reconnect elsewhere, so its closing handshake is
 * not awaited (with 10,000 TLS agents those handshakes took seconds of both cores). A socket
 * whose frame is still queued after GOING_AWAY_GRACE_MS is dropped all the same.
 */
async function sayGoingAway(clients: WebSocket[]): Promise<void> {
  let queued: WebSocket[] = [];
  for (let i = 0; i < clients.length; i += GOING_AWAY_SLICE) {
    const slice = clients.slice(i, i + GOING_AWAY_SLICE);
    for (const ws of slice) ws.close(CLOSE.goingAway, 'server shutting down');
    // A TLS socket reports a write done on the next turn, even when the kernel took it at once.
    await nextTurn();
    queued.push(...dropFlushed(slice));
  }
  const deadline = Date.now() + GOING_AWAY_GRACE_MS;
  while (queued.length > 0 && Date.now() < deadline) {
    await sleep(10);
    queued = dropFlushed(queued);
  }
  for (const ws of queued) ws.terminate();
}

/** Terminates the sockets whose close frame has left (the kernel has it); returns the others. */
function dropFlushed(clients: WebSocket[]): WebSocket[] {
  return clients.filter((ws) => {
    if (ws.bufferedAmount > 0) return true;
    ws.terminate();
    return false;
  });
}
