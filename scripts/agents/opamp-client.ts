/**
 * A minimal OpAMP client over `ws` and over `fetch`, built on the codec: one message at a
 * time, no CSR, no configuration handling. Tests use it to say exactly what an agent sends;
 * the simulator (agent.ts) reuses its identity helpers.
 */
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { MessageInitShape } from '@bufbuild/protobuf';
import WebSocket from 'ws';
import {
  decodeServerToAgent,
  encodeAgentToServer,
  frameWebSocket,
  unframeWebSocket,
  type AgentToServerSchema,
  type ServerToAgent,
} from '../../gateway/codec';

export type AgentMessage = MessageInitShape<typeof AgentToServerSchema>;

/** A UUID v7 (what the specification recommends): 48-bit milliseconds, version, variant, random. */
export function newInstanceUid(): Uint8Array {
  const bytes = new Uint8Array(randomBytes(16));
  const ms = Date.now();
  for (let i = 0; i < 6; i++) bytes[i] = Math.floor(ms / 2 ** (8 * (5 - i))) & 0xff;
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return bytes;
}

export function uidToUuid(uid: Uint8Array): string {
  const hex = Buffer.from(uid).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An agent description from flat string attributes (`service.name` identifying). */
export function description(identifying: Record<string, string>, nonIdentifying: Record<string, string> = {}) {
  const kv = (attrs: Record<string, string>) =>
    Object.entries(attrs).map(([key, value]) => ({ key, value: { value: { case: 'stringValue' as const, value } } }));
  return { identifyingAttributes: kv(identifying), nonIdentifyingAttributes: kv(nonIdentifying) };
}

export interface WsAgent {
  socket: WebSocket;
  /** Sends one AgentToServer and waits for the reply. */
  exchange(message: AgentMessage): Promise<ServerToAgent>;
  /** Sends one AgentToServer without waiting (for messages the server refuses). */
  send(message: AgentMessage): void;
  /** Sends bytes as one binary message, as is. */
  sendRaw(bytes: Buffer): void;
  /** Resolves with the close code and reason, whoever closed. */
  closed: Promise<{ code: number; reason: string }>;
  close(): Promise<{ code: number; reason: string }>;
}

export class UpgradeRefused extends Error {
  constructor(readonly status: number) {
    super(`WebSocket upgrade refused with HTTP ${status}`);
  }
}

/** Opens a WebSocket; rejects with UpgradeRefused when the server answers HTTP instead. */
/** `ca`: the PEM that signed the listener's certificate (wss://). */
export function connectWs(url: string, options: { token?: string; ca?: string } = {}): Promise<WsAgent> {
  const headers = options.token ? { authorization: `Bearer ${options.token}` } : undefined;
  const socket = new WebSocket(url, { headers, ca: options.ca });
  const replies: ServerToAgent[] = [];
  const waiters: Array<(reply: ServerToAgent) => void> = [];
  socket.on('message', (data) => {
    const reply = decodeServerToAgent(unframeWebSocket(data as Buffer));
    const waiter = waiters.shift();
    if (waiter) waiter(reply);
    else replies.push(reply);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return new Promise((resolve, reject) => {
    socket.once('unexpected-response', (_req, res) => {
      reject(new UpgradeRefused(res.statusCode ?? 0));
      socket.terminate();
    });
    socket.once('error', reject);
    socket.once('open', () =>
      resolve({
        socket,
        closed,
        exchange: (message) =>
          new Promise<ServerToAgent>((resolveReply, rejectReply) => {
            const queued = replies.shift();
            if (queued) return resolveReply(queued);
            waiters.push(resolveReply);
            void closed.then(({ code, reason }) => rejectReply(new Error(`socket closed ${code} ${reason}`)));
            socket.send(frameWebSocket(encodeAgentToServer(message)));
          }),
        send: (message) => socket.send(frameWebSocket(encodeAgentToServer(message))),
        sendRaw: (bytes) => socket.send(bytes, { binary: true }),
        close: () => {
          socket.close(1000);
          return closed;
        },
      }),
    );
  });
}

export interface HttpReply {
  status: number;
  message?: ServerToAgent;
  text?: string;
}

/** One HTTP poll: POST application/x-protobuf, optionally gzip in both directions. */
export async function postHttp(
  url: string,
  message: AgentMessage | Buffer,
  options: { token?: string; gzip?: boolean; contentType?: string } = {},
): Promise<HttpReply> {
  let body: Buffer = Buffer.isBuffer(message) ? message : Buffer.from(encodeAgentToServer(message));
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/x-protobuf' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.gzip) {
    body = gzipSync(body);
    headers['content-encoding'] = 'gzip';
    headers['accept-encoding'] = 'gzip';
  }
  // fetch inflates a gzip response itself.
  const response = await fetch(url, { method: 'POST', headers, body });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) return { status: response.status, text: bytes.toString('utf8') };
  return { status: 200, message: decodeServerToAgent(bytes) };
}
