/**
 * The agent port: OpAMP at `/v1/opamp` over WebSocket (binary frames, 0x00 header) and over
 * plain HTTP POST of `application/x-protobuf` (optionally gzip). Plain TCP only for now;
 * TLS and client certificates come with the internal CA.
 *
 * No listen here (habit 1): `main.ts` calls `server.listen(...)` on `Agents:Listen`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Settings } from '../settings';
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
import { admitAgent, agentIdFromUid, checkCredential, tokenFromRequest, type Credential, type RefusalReason } from './enrollment';
import { applyStatus, replyTo, SequenceTracker, setOffline } from './status';

export const OPAMP_PATH = '/v1/opamp';

export interface AgentListenerDeps {
  db: Knex;
  logger: Logger;
  settings: Readonly<Settings>;
}

export interface AgentListener {
  server: Server;
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

const refusalStatus = (reason: RefusalReason) => (reason === 'bad-uid' ? 400 : 401);
const refusalClose = (reason: RefusalReason) => (reason === 'bad-uid' ? CLOSE.invalidPayload : CLOSE.policyViolation);

export function createAgentListener({ db, logger: parentLogger }: AgentListenerDeps): AgentListener {
  const logger = parentLogger.child({ component: 'opamp' });
  const sequences = new SequenceTracker();
  /** The live WebSocket of each agent; an older one is closed when a newer one is admitted. */
  const sessions = new Map<string, WebSocket>();
  /** Offline updates still running, so close() can wait for them. */
  const pending = new Set<Promise<unknown>>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: OPAMP_MAX_MESSAGE_BYTES + 10 });

  const track = (work: Promise<unknown>) => {
    const tracked = work.catch((error) => logger.error({ err: error }, 'opamp background update failed')).finally(() => pending.delete(tracked));
    pending.add(tracked);
  };

  /** Admission, status, reply: the same for both transports. */
  async function serve(credential: Credential, message: AgentToServer, transport: 'websocket' | 'http', newSession: boolean) {
    const admission = await admitAgent(db, credential, message.instanceUid, transport);
    if (!admission.ok) return admission;
    const { agentId } = admission;
    const first = newSession || !sequences.has(agentId);
    const reportFullState = sequences.record(agentId, message.sequenceNum, message.agentDescription !== undefined) && !admission.enrolled;
    if (message.agentDisconnect && transport === 'http') {
      await setOffline(db, agentId, 'agent-disconnect');
      sequences.forget(agentId);
    } else {
      await applyStatus(db, agentId, message, { newSession, transport });
    }
    if (admission.enrolled) logger.info({ agentId, tokenId: credential.row.id, transport }, 'agent enrolled');
    return { ok: true as const, agentId, reply: replyTo(message, { first, reportFullState }) };
  }

  // -------------------------------------------------------------------------------------
  // WebSocket

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    socket.on('error', () => socket.destroy());
    if (pathOf(req) !== OPAMP_PATH) return rejectUpgrade(socket, 404, 'Not Found');
    const checked = await checkCredential(db, tokenFromRequest(req));
    if (!checked.ok) {
      logger.info({ reason: checked.reason, transport: 'websocket' }, 'agent connection refused');
      return rejectUpgrade(socket, 401, 'Unauthorized', 'WWW-Authenticate: Bearer\r\n');
    }
    wss.handleUpgrade(req, socket, head, (ws) => runSession(ws, checked.credential));
  }

  function runSession(ws: WebSocket, credential: Credential) {
    let agentId: string | undefined;
    let queue = Promise.resolve();
    const refuse = (code: number, reason: string) => {
      logger.info({ agentId, code, reason }, 'agent session closed by the server');
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
      if (agentId && uid !== agentId) return refuse(CLOSE.policyViolation, 'instance uid changed within the session');
      const served = await serve(credential, message, 'websocket', agentId === undefined);
      if (!served.ok) return refuse(refusalClose(served.reason), `refused: ${served.reason}`);
      if (!agentId) {
        agentId = served.agentId;
        const older = sessions.get(agentId);
        sessions.set(agentId, ws);
        if (older && older !== ws) older.close(CLOSE.policyViolation, 'replaced by a newer connection');
      }
      if (ws.readyState === ws.OPEN) ws.send(frameWebSocket(encodeServerToAgent(served.reply)));
    }

    ws.on('message', (data, isBinary) => {
      // One message at a time per agent, in order (sequence numbers, row updates).
      queue = queue
        .then(() => onMessage(data, isBinary))
        .catch((error) => {
          logger.error({ err: error, agentId }, 'opamp message failed');
          if (ws.readyState === ws.OPEN) ws.close(CLOSE.internalError, 'internal error');
        });
    });
    ws.on('error', (error) => logger.info({ err: error, agentId }, 'agent socket error'));
    ws.on('close', (code) => {
      if (!agentId || sessions.get(agentId) !== ws) return;
      const id = agentId;
      sessions.delete(id);
      sequences.forget(id);
      track(queue.then(() => setOffline(db, id, `websocket closed (${code})`)));
    });
  }

  // -------------------------------------------------------------------------------------
  // HTTP

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    if (pathOf(req) !== OPAMP_PATH) return reply(res, 404, 'not found');
    if (req.method !== 'POST') return reply(res, 405, 'POST application/x-protobuf, or a WebSocket upgrade', { allow: 'POST' });
    const checked = await checkCredential(db, tokenFromRequest(req));
    if (!checked.ok) {
      logger.info({ reason: checked.reason, transport: 'http' }, 'agent request refused');
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
    const served = await serve(checked.credential, message, 'http', false);
    if (!served.ok) return reply(res, refusalStatus(served.reason), served.reason === 'bad-uid' ? 'instance uid must be 16 bytes' : 'unauthorized');
    const out = encodeHttpBody(encodeServerToAgent(served.reply), acceptsGzip(header(req, 'accept-encoding')));
    res.writeHead(200, {
      'content-type': 'application/x-protobuf',
      'content-length': out.body.length,
      ...(out.contentEncoding ? { 'content-encoding': out.contentEncoding } : {}),
    });
    res.end(out.body);
  }

  const server = createServer((req, res) => {
    onRequest(req, res).catch((error) => {
      logger.error({ err: error }, 'opamp request failed');
      if (!res.headersSent) reply(res, 500, 'internal error');
      else res.destroy();
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    onUpgrade(req, socket, head).catch((error) => {
      logger.error({ err: error }, 'opamp upgrade failed');
      rejectUpgrade(socket, 503, 'Service Unavailable');
    });
  });

  return {
    server,
    async close() {
      for (const ws of wss.clients) ws.close(CLOSE.goingAway, 'server shutting down');
      await waitForClients(wss);
      await Promise.all([...pending]);
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
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

/** Resolves when every client socket has closed (a stuck peer is terminated after 2 s). */
async function waitForClients(wss: WebSocketServer): Promise<void> {
  const clients = [...wss.clients];
  await Promise.all(
    clients.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) return resolve();
          const timer = setTimeout(() => ws.terminate(), 2000);
          ws.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        }),
    ),
  );
}
