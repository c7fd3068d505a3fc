/**
 * OpAMP over WebSocket: the upgrade (path, credential), then one session per socket whose
 * binary frames (0x00 header) are served one at a time, in order.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import {
  decodeAgentToServer,
  encodeServerToAgent,
  frameWebSocket,
  OpampFrameError,
  unframeWebSocket,
  type AgentToServer,
} from './codec';
import { isDatabaseUnavailable } from '../db/errors';
import { credentialOf } from './credentials';
import { agentIdFromUid, type Credential } from './enrollment';
import { track, type ListenerContext } from './listener-context';
import { OPAMP_PATH, pathOf } from './opamp-path';
import { refusalText, refusedAgent, tryLater, type Refusal } from './refusals';
import { serveMessage } from './serve-message';
import type { AdoptedSession, WsSession } from './sessions';
import { DATABASE_RETRY_SECONDS, retryLaterReply } from './status';

/** WebSocket close codes (RFC 6455) for what an agent did wrong. */
export const CLOSE = {
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

const refusalClose = ({ reason }: Refusal) =>
  reason === 'bad-uid' ? CLOSE.invalidPayload : tryLater(reason) ? CLOSE.tryAgainLater : CLOSE.policyViolation;

/** The server's `upgrade` listener: an upgrade that fails is logged and answered 503. */
export function upgradeHandler(ctx: ListenerContext, wss: WebSocketServer) {
  return function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    onUpgrade(ctx, wss, req, socket, head).catch((error) => {
      ctx.logger.error({ err: error }, 'opamp upgrade failed');
      rejectUpgrade(socket, 503, 'Service Unavailable');
    });
  };
}

/** Checks an upgrade's path and credential, then runs a session on the socket (or refuses it). */
async function onUpgrade(
  ctx: ListenerContext,
  wss: WebSocketServer,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
) {
  socket.on('error', () => socket.destroy());
  if (pathOf(req) !== OPAMP_PATH) return rejectUpgrade(socket, 404, 'Not Found');
  const checked = await credentialOf(ctx, req);
  // The close frames may have gone out while this was checked: the agent goes elsewhere.
  if (ctx.stopping) return rejectUpgrade(socket, 503, 'Service Unavailable');
  if (!checked.ok) {
    // No message yet, so no uid: the agent is whoever holds that certificate or token.
    ctx.logger.info(
      { tokenId: checked.tokenId, reason: checked.reason, transport: 'websocket' },
      'agent connection refused',
    );
    return rejectUpgrade(socket, 401, 'Unauthorized', 'WWW-Authenticate: Bearer\r\n');
  }
  wss.handleUpgrade(req, socket, head, (ws) => runSession(ctx, ws, checked.credential));
}

/** One agent's session: its messages served one at a time; its close marks the agent offline. */
function runSession(ctx: ListenerContext, ws: WebSocket, credential: Credential) {
  const { logger, sessions } = ctx;
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

  ws.on('message', (data, isBinary) => session.run(() => onMessage(ctx, session, data, isBinary)));
  ws.on('pong', () => (session.alive = true));
  ws.on('error', (error) => logger.info({ err: error, agentId: session.agentId }, 'agent socket error'));
  ws.on('close', (code) => {
    if (!sessions.release(session)) return;
    const id = session.agentId!;
    ctx.sequences.forget(id);
    // A held agent was never online: its close changes nothing (approval closes it on purpose).
    // Only while this session speaks for the agent: it may have reconnected to another replica.
    if (!session.pending && !ctx.closedByShutdown.has(session.id))
      track(
        ctx,
        queue.then(() => ctx.closed({ agentId: id, sessionId: session.id, reason: `websocket closed (${code})` })),
      );
  });
}

/** Serves one frame of a session: the reply goes out, or the session is closed with why. */
async function onMessage(ctx: ListenerContext, session: WsSession, data: RawData, isBinary: boolean) {
  const { ws, credential } = session;
  if (ws.readyState !== ws.OPEN) return;
  if (!isBinary) return refuse(ctx, session, CLOSE.unsupportedData, 'OpAMP messages are binary');
  let message: AgentToServer;
  try {
    message = decodeAgentToServer(unframeWebSocket(toBuffer(data)));
  } catch (error) {
    if (error instanceof OpampFrameError) return refuse(ctx, session, FRAME_CLOSE[error.reason], error.message);
    throw error;
  }
  const uid = agentIdFromUid(message.instanceUid);
  if (session.agentId && uid !== session.agentId)
    return refuse(ctx, session, CLOSE.policyViolation, 'instance uid changed within the session', message);
  let served;
  try {
    served = await serveMessage(ctx, credential, message, 'websocket', {
      id: session.id,
      newSession: session.agentId === undefined,
      sentHash: session.sentHash,
      remember: (hash) => (session.sentHash = hash),
      keptEffective: {
        get: () => session.keptEffectiveHash,
        set: (hash) => (session.keptEffectiveHash = hash),
      },
      admitted: session.admitted,
    });
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    return retryWhenTheDatabaseIsBack(ctx, session, message, error);
  }
  if (!served.ok) {
    if (served.reason === 'stopping') return; // the close frame is on its way
    if (served.reason === 'flapping')
      ws.send(frameWebSocket(encodeServerToAgent(retryLaterReply(message, served.retryAfterSeconds, 'flapping'))));
    return refuse(ctx, session, refusalClose(served), refusalText(served), message, served.reason);
  }
  session.pending = served.pending;
  session.admitted = { ...served.admission, enrolled: false };
  if (!session.agentId) {
    session.agentId = served.agentId;
    // A copy: on Node 24 (not 20) a TLS read hands over a view into a 64 KiB buffer that
    // later reads share, and a kept 16-byte view would keep all of it alive per agent.
    session.uid = new Uint8Array(message.instanceUid);
    const adopted = session as AdoptedSession;
    ctx.sessions.adopt(adopted);
    // A cut-off committed while this message was served found no session to close. The
    // message is done either way: should the re-check fail, its reply still goes out
    // (notifications and the resync after a lost LISTEN remain).
    await ctx.sessions
      .recheckAdopted(adopted)
      .catch((error: unknown) => ctx.logger.warn({ err: error, agentId: adopted.agentId }, 'session re-check failed'));
  }
  if (ws.readyState === ws.OPEN) ws.send(frameWebSocket(encodeServerToAgent(served.reply)));
}

/**
 * The database went away while a message was served (a restart, a failover): the agent keeps
 * its socket and is told to send again later (ServerErrorResponse UNAVAILABLE with
 * retry_info, as OpAMP has it), rather than being cut off. What the message carried was not
 * recorded, so its sequence is forgotten: the next message is asked for the agent's full state.
 */
function retryWhenTheDatabaseIsBack(ctx: ListenerContext, session: WsSession, message: AgentToServer, error: unknown) {
  const agentId = session.agentId ?? agentIdFromUid(message.instanceUid);
  if (agentId) ctx.sequences.forget(agentId);
  ctx.logger.warn({ err: error, agentId }, 'database unavailable: the agent is told to retry');
  if (session.ws.readyState === session.ws.OPEN)
    session.ws.send(
      frameWebSocket(
        encodeServerToAgent(
          retryLaterReply(message, DATABASE_RETRY_SECONDS, 'the server cannot reach its database; retry shortly'),
        ),
      ),
    );
}

/**
 * Closes a session for what its agent sent, and logs it. `refusal`: why, for the log, when
 * the agent is told less (see refusalText).
 */
function refuse(
  ctx: ListenerContext,
  session: WsSession,
  code: number,
  reason: string,
  message?: AgentToServer,
  refusal?: string,
) {
  const agent = session.agentId ? { agentId: session.agentId } : refusedAgent(message, session.credential);
  ctx.logger.info({ ...agent, code, reason, refusal }, 'agent session closed by the server');
  session.ws.close(code, reason.slice(0, 120));
}

/** A frame's bytes as one Buffer, whichever shape `ws` delivered them in. */
function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** Answers an upgrade with an HTTP status instead, and closes the socket. */
function rejectUpgrade(socket: Duplex, status: number, text: string, extraHeaders = '') {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n${extraHeaders}\r\n`);
}
