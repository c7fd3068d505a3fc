/**
 * OpAMP over plain HTTP: each POST of `application/x-protobuf` (optionally gzip) carries one
 * message and is answered with one reply; there is no session.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  acceptsGzip,
  decodeAgentToServer,
  decodeHttpBody,
  encodeHttpBody,
  encodeServerToAgent,
  OPAMP_MAX_MESSAGE_BYTES,
  OpampFrameError,
  type AgentToServer,
} from './codec';
import { isDatabaseUnavailable } from '../db/errors';
import { credentialOf } from './credentials';
import { agentIdFromUid } from './enrollment';
import type { ListenerContext } from './listener-context';
import { OPAMP_PATH, pathOf } from './opamp-path';
import { refusalText, refusedAgent, tryLater, type Refusal } from './refusals';
import { serveMessage } from './serve-message';
import { DATABASE_RETRY_SECONDS } from './status';

const FRAME_STATUS: Record<OpampFrameError['reason'], number> = {
  'truncated-header': 400,
  'bad-header': 400,
  'too-large': 413,
  'bad-protobuf': 400,
  'bad-gzip': 400,
  'unsupported-encoding': 415,
};

const refusalStatus = ({ reason }: Refusal) =>
  reason === 'bad-uid' || reason === 'bad-csr' ? 400 : tryLater(reason) ? 503 : 401;

/** The server's request listener: a request that fails is logged and answered 500, or 503 with the database away (or cut). */
export function requestHandler(ctx: ListenerContext) {
  return function handleRequest(req: IncomingMessage, res: ServerResponse) {
    onRequest(ctx, req, res).catch((error) => {
      // The database away (a restart, a failover): the agent polls again after Retry-After.
      if (isDatabaseUnavailable(error)) {
        ctx.logger.warn({ err: error }, 'database unavailable: the agent is told to retry');
        if (!res.headersSent)
          return reply(res, 503, 'the server cannot reach its database; retry shortly', {
            'retry-after': String(DATABASE_RETRY_SECONDS),
          });
      } else ctx.logger.error({ err: error }, 'opamp request failed');
      if (!res.headersSent) reply(res, 500, 'internal error');
      else res.destroy();
    });
  };
}

/** Checks a request (path, method, credential, body), serves its message and writes the reply. */
async function onRequest(ctx: ListenerContext, req: IncomingMessage, res: ServerResponse) {
  const { logger, sessions } = ctx;
  if (pathOf(req) !== OPAMP_PATH) return reply(res, 404, 'not found');
  if (req.method !== 'POST')
    return reply(res, 405, 'POST application/x-protobuf, or a WebSocket upgrade', { allow: 'POST' });
  const checked = await credentialOf(ctx, req);
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
  const served = await serveMessage(ctx, checked.credential, message, 'http', {
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

/** A request header as one string (repeated ones joined with commas). */
function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** Answers with a status and a line of plain text. */
function reply(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(`${text}\n`);
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
