import { OutboundRefused, type Outbound } from './outbound';
import type { Response } from 'undici';

/**
 * Calls to a federation peer's REST API (another installation of this service), with the
 * `peer` PAT that installation issued to us. Every call has a deadline; an answer that is
 * not 2xx becomes a PeerCallError that says what happened without the token: the peer was
 * unreachable, did not answer in time, refused (4xx, with its problem document) or failed
 * (5xx). Retrying is the caller's business (Temporal's retry policy in the worker). Every
 * call is under the outbound policy; a peer refused by it and one that does not answer are
 * both `unreachable`, with the same words (platform/outbound.ts).
 */

/** Where a peer is and the credential it accepts from us. */
export interface PeerEndpoint {
  name: string;
  baseUrl: string;
  token: string;
}

export type PeerCallFailure = 'unreachable' | 'timeout' | 'refused' | 'failed';

/** The part of an RFC 9457 problem a peer answered with that we pass on. */
export interface PeerProblem {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  [member: string]: unknown;
}

export class PeerCallError extends Error {
  constructor(
    readonly peer: string,
    readonly failure: PeerCallFailure,
    message: string,
    /** For `refused` and `failed`: the peer's status and problem document (if it sent one). */
    readonly problem?: PeerProblem,
  ) {
    super(`peer '${peer}': ${message}`);
    this.name = 'PeerCallError';
  }
}

/** The largest answer read from a peer (a page of 1,000 agents is well below it). */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

export interface PeerCall {
  body?: unknown;
  timeoutMs: number;
  /** Where calls may go: a peer refused by the policy, or not answering, is `unreachable`. */
  outbound: Outbound;
  /** Aborts the call early (e.g. the caller's own deadline). */
  signal?: AbortSignal;
}

/** Calls `method path` on the peer and returns its JSON answer (undefined for an empty body). */
export async function callPeer<T>(peer: PeerEndpoint, method: string, path: string, call: PeerCall): Promise<T> {
  const url = new URL(path, peer.baseUrl.endsWith('/') ? peer.baseUrl : `${peer.baseUrl}/`);
  const timeout = AbortSignal.timeout(call.timeoutMs);
  const signal = call.signal ? AbortSignal.any([timeout, call.signal]) : timeout;
  let response: Response;
  try {
    response = await call.outbound.fetch(url, {
      method,
      signal,
      redirect: 'error',
      headers: {
        authorization: `Bearer ${peer.token}`,
        accept: 'application/json',
        ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    });
  } catch (error) {
    if (error instanceof OutboundRefused) throw new PeerCallError(peer.name, 'unreachable', error.message);
    if (timeout.aborted) throw new PeerCallError(peer.name, 'timeout', `no answer within ${call.timeoutMs} ms`);
    throw error;
  }
  const text = await readCapped(response, peer, timeout);
  const body = parseJson(text);
  if (response.ok) return body as T;
  const problem = { status: response.status, ...(isObject(body) ? body : {}) } as PeerProblem;
  const failure = response.status >= 500 ? 'failed' : 'refused';
  const what = problem.title ? `${problem.title}${problem.detail ? `: ${problem.detail}` : ''}` : 'no problem document';
  throw new PeerCallError(
    peer.name,
    failure,
    `${method} ${url.pathname} answered ${response.status} (${what})`,
    problem,
  );
}

/**
 * The peer API's paths this installation calls (docs/federation.md). Relative to the peer's
 * base URL, except the ping, which has always been asked at the origin's root.
 */
export const PING_PATH = '/api/federation/ping';
const INCOMING_ROLLOUTS_PATH = 'api/federation/incoming/rollouts';
export const incomingEvaluatePath = () => `${INCOMING_ROLLOUTS_PATH}/evaluate`;
export const incomingRolloutPath = (key: string) => `${INCOMING_ROLLOUTS_PATH}/${encodeURIComponent(key)}`;

/** What one ping got: the peer's answer, or why there was none, with when and how long it took. */
export type PingReply = { at: Date; latencyMs: number } & ({ answer: unknown } | { error: string });

/** Asks the peer who it is. Never throws for the peer's sake, and never shows the credential. */
export async function pingPeer(endpoint: PeerEndpoint, call: PeerCall): Promise<PingReply> {
  const started = performance.now();
  const at = new Date();
  const latency = () => Math.round(performance.now() - started);
  try {
    const answer = await callPeer<unknown>(endpoint, 'GET', PING_PATH, call);
    return { at, latencyMs: latency(), answer };
  } catch (error) {
    if (!(error instanceof PeerCallError)) throw error;
    return { at, latencyMs: latency(), error: error.message };
  }
}

async function readCapped(response: Response, peer: PeerEndpoint, timeout: AbortSignal): Promise<string> {
  try {
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > MAX_ANSWER_BYTES) throw new Error(`answer of ${declared} bytes is over the limit`);
    const text = await response.text();
    if (Buffer.byteLength(text) > MAX_ANSWER_BYTES) throw new Error('answer is over the limit');
    return text;
  } catch (error) {
    if (timeout.aborted) throw new PeerCallError(peer.name, 'timeout', 'the answer did not arrive in time');
    throw new PeerCallError(peer.name, 'failed', `the answer could not be read (${causeOf(error)})`);
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** fetch's own message is "fetch failed"; the cause says why (ECONNREFUSED, a TLS error). */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}
