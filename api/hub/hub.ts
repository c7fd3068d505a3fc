/**
 * The live-updates hub (`/hubs/live-updates`): operators' screens and scripts subscribe to
 * event types over a WebSocket and get each event as a CloudEvents envelope as it commits.
 *
 * Every replica LISTENs once (the app's PgListener) for the ids the outbox announces, reads
 * those events in one query, frames each once (outgoing.ts) and fans it out to its own
 * subscribers, in the order the notifications arrived (commit order). `since` replays from
 * the table.
 * The protocol is docs/events.md; the decisions behind it are there too.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { findEventsByIds, listEventsQuery, type EventRow } from '../../db/repos/events';
import { bearerToken, type TokenAuthenticator } from '../auth/authenticate';
import { SESSION_COOKIE, type ConsoleSessions } from '../auth/console-session';
import type { Principal } from '../auth/principal';
import type { AuditRecord } from '../../db/repos/audit';
import { HUB_ENDPOINT } from '../http/endpoints';
import { requestIdFrom } from '../middleware/request-id';
import { endWithProblem } from '../middleware/problems';
import { Problem, problems } from '../problems';
import { hiddenPrefixes, matchesAny } from './event-types';
import { OutgoingEvent, socketOf, writeFrames } from './outgoing';
import { HUB_LIMITS, MessageAllowance } from './limits';
import { clientMessage, type Subscribe } from './protocol';
import { resolveSince } from './since';

export const HUB_PATH = '/hubs/live-updates';

/** A text frame's text (ws hands it over as one buffer, or fragments). */
export function textOf(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return (Buffer.isBuffer(data) ? data : Buffer.from(data)).toString('utf8');
}

/** Close codes a client sees (besides 1001 when the replica stops). */
export const HUB_CLOSE = {
  /** It did not read fast enough; reconnect with `since` = the last event it got. */
  slowConsumer: 4008,
  /** Its token was revoked or expired; reconnect with a valid one. */
  unauthorized: 4401,
  goingAway: 1001,
  /** This replica lost its LISTEN connection meanwhile; reconnect with `since`. */
  restart: 1012,
  /** It sent too many malformed messages, or kept sending past the rate (limits.ts). */
  policyViolation: 1008,
} as const;

export interface HubOptions {
  db: Knex;
  logger: Logger;
  authenticateToken: TokenAuthenticator;
  /** The console's sessions: a browser without a token subscribes with its session cookie. */
  sessions?: Pick<ConsoleSessions, 'sessionPrincipal'>;
  /** `Http:PublicBaseUrl`: the only origin whose pages may use the session cookie here. */
  publicBaseUrl: string;
  errorsBaseUrl: string;
  /** How far back `since` may reach. */
  replayHours: number;
  /** Bytes a subscriber may leave unread before it is cut off. */
  maxBufferedBytes?: number;
  /** Ping every interval; a peer that did not answer the previous ping is closed. */
  heartbeatMs?: number;
  /** Tokens are checked again this often (OIDC expiry; PAT revocation is pushed at once). */
  recheckMs?: number;
  /** Records every upgrade, accepted (101) or refused, in the audit trail. */
  audit: (record: Omit<AuditRecord, 'occurred_at'>) => void;
  /** `Http:TrustProxy`: the caller's address is the first of `X-Forwarded-For`. */
  trustProxy: boolean;
}

const RATE_LIMITED = {
  code: 'rate-limited',
  message:
    `at most ${HUB_LIMITS.messagesPerSecond} messages a second (${HUB_LIMITS.burst} at once): ` +
    'messages over it are dropped',
};
const TOO_MANY = {
  code: 'too-many-subscriptions',
  message: `a connection holds at most ${HUB_LIMITS.subscriptions} subscriptions: unsubscribe some, or use a family (rollout.*)`,
};

/** Remembered per connection, so an event reached by a replay and live is sent once. */
const RECENT_IDS = 5000;
const REPLAY_PAGE = 500;
/**
 * The most events one fan-out takes. A subscriber's share of a batch is measured against its
 * allowance as a whole, so a batch must stay well within it (500 events of ~400 bytes are
 * 200 KB of the 1 MiB default), or a commit of 40,000 events would cut off readers that keep up.
 */
const MAX_BATCH = 500;
const CLOSE_GRACE_MS = 30_000;
/** Node's timers hold at most ~24.8 days. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Subscription {
  events: string[];
  subject?: string;
  rollout?: string;
}

/** What a connection was admitted with, and is checked again with. */
type Credential = { token: string } | { sessionSecret: string };

/** The console's session secret from the upgrade's Cookie header. */
function sessionSecretOf(req: IncomingMessage): string | undefined {
  for (const pair of (req.headers.cookie ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === SESSION_COOKIE) return pair.slice(at + 1).trim() || undefined;
  }
  return undefined;
}

class Subscriber {
  readonly subscriptions: Subscription[] = [];
  /** How many messages it may send, and how many malformed ones it sent lately. */
  readonly allowance = new MessageAllowance();
  /** Where its event frames are written. */
  readonly socket: Duplex;
  /** Live events held back while a replay runs, so order holds. */
  held: OutgoingEvent[] | undefined;
  alive = true;
  /** Its messages are handled one after the other (a replay finishes before the next subscribe). */
  handled: Promise<void> = Promise.resolve();
  /** The ids of the last RECENT_IDS events sent, and the same ids oldest first (a ring). */
  private readonly recent = new Set<string>();
  private readonly recentRing: string[] = [];
  private oldest = 0;

  constructor(
    readonly ws: WebSocket,
    public principal: Principal,
    readonly credential: Credential,
  ) {
    this.socket = socketOf(ws);
  }

  wants({ row, needs }: OutgoingEvent): boolean {
    if (row.tenant_id !== this.principal.tenantId) return false;
    if (needs !== undefined && !this.principal.permissions.has(needs)) return false;
    return this.subscriptions.some(
      (s) =>
        matchesAny(s.events, row.type) &&
        (s.subject === undefined || s.subject === row.subject) &&
        (s.rollout === undefined || s.rollout === row.rollout_id),
    );
  }

  /** False when the event was sent already. */
  remember(id: string): boolean {
    if (this.recent.has(id)) return false;
    this.recent.add(id);
    if (this.recentRing.length < RECENT_IDS) {
      this.recentRing.push(id);
    } else {
      this.recent.delete(this.recentRing[this.oldest]!);
      this.recentRing[this.oldest] = id;
      this.oldest = (this.oldest + 1) % RECENT_IDS;
    }
    return true;
  }
}

export class LiveHub {
  // No compression: every subscriber gets the same prepared frame (outgoing.ts).
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024, perMessageDeflate: false });
  private readonly subscribers = new Set<Subscriber>();
  private readonly maxBuffered: number;
  private pendingIds: string[] = [];
  private fanningOut = false;
  private fanning: Promise<void> = Promise.resolve();
  private readonly timers: NodeJS.Timeout[];

  private readonly publicOrigin: string;

  constructor(private readonly options: HubOptions) {
    this.maxBuffered = options.maxBufferedBytes ?? 1024 * 1024;
    this.publicOrigin = new URL(options.publicBaseUrl).origin;
    this.timers = [
      setInterval(() => this.heartbeat(), options.heartbeatMs ?? 30_000),
      setInterval(() => void this.recheck(), options.recheckMs ?? 15_000),
    ];
    for (const timer of this.timers) timer.unref();
  }

  /** Subscribers connected to this replica now. */
  get size(): number {
    return this.subscribers.size;
  }

  /** The outbox announced an event (NOTIFY payload: its id). */
  announced(id: string): void {
    this.pendingIds.push(id);
    if (this.fanningOut) return;
    this.fanningOut = true;
    this.fanning = this.fanOutPending();
  }

  /**
   * Fans out what was announced, one batch after the other, so events leave in the order
   * they were announced. A batch is what was announced while the previous one went out (up
   * to MAX_BATCH): no timer, so a quiet hub sends at once, and batches (and with them a
   * subscriber's events per write, the hub's main cost) grow exactly when it falls behind.
   */
  private async fanOutPending(): Promise<void> {
    try {
      for (;;) {
        // The notifications that came in the same read join this batch.
        await new Promise((resolve) => setImmediate(resolve));
        if (this.pendingIds.length === 0) return;
        const ids = this.pendingIds.splice(0, MAX_BATCH);
        await this.fanOut(ids).catch((error: unknown) =>
          this.options.logger.error({ err: error }, 'live updates: fan-out failed'),
        );
      }
    } finally {
      this.fanningOut = false;
    }
  }

  private async fanOut(ids: string[]): Promise<void> {
    if (this.subscribers.size === 0) return;
    const rows = await findEventsByIds(this.options.db, ids);
    const order = new Map(ids.map((id, i) => [id, i]));
    rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    const events = rows.map((row) => new OutgoingEvent(row));
    for (const subscriber of this.subscribers) {
      const wanted = events.filter((event) => subscriber.wants(event));
      if (wanted.length === 0) continue;
      if (subscriber.held) subscriber.held.push(...wanted);
      else this.send(subscriber, wanted);
    }
  }

  /**
   * Sends a subscriber the events it has not had yet, in one write. An event goes out while
   * the bytes unread before it are within the allowance (so memory stays within the
   * allowance plus one event, and an event larger than the allowance still reaches a reader
   * that keeps up); past it, the slow-consumer close.
   */
  private send(subscriber: Subscriber, events: OutgoingEvent[]): void {
    const { ws } = subscriber;
    if (ws.readyState !== ws.OPEN) return;
    const frames: Buffer[] = [];
    let buffered = ws.bufferedAmount;
    let overflow = false;
    for (const event of events) {
      if (!subscriber.remember(event.row.id)) continue;
      overflow = buffered > this.maxBuffered;
      if (overflow) break;
      buffered += event.frame.length;
      frames.push(event.frame);
    }
    if (frames.length > 0) writeFrames(subscriber.socket, frames);
    if (overflow) this.cutOff(subscriber, HUB_CLOSE.slowConsumer, 'slow consumer: reconnect with since');
  }

  /** Handles the upgrade when the path is the hub's; false for any other path. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://hub');
    if (url.pathname !== HUB_PATH) return false;
    const seen: { principal?: Principal } = {};
    const requestId = requestIdFrom(req.headers['x-request-id'] as string | undefined);
    void this.admit(req, url, seen)
      .then(({ principal, credential }) => {
        this.audit(req, requestId, 101, principal);
        this.wss.handleUpgrade(req, socket, head, (ws) => this.run(new Subscriber(ws, principal, credential)));
      })
      .catch((error: unknown) => {
        const status = this.refuse(socket, error, url.pathname, requestId);
        this.audit(req, requestId, status, seen.principal);
      });
    return true;
  }

  /** The upgrade's audit row: who (when known), the status answered, from where. */
  private audit(req: IncomingMessage, requestId: string, status: number, principal: Principal | undefined): void {
    const forwarded = this.options.trustProxy
      ? String(req.headers['x-forwarded-for'] ?? '')
          .split(',')[0]!
          .trim()
      : '';
    this.options.audit({
      tenant_id: principal?.tenantId ?? null,
      actor_type: principal?.kind ?? 'anonymous',
      actor: principal?.name ?? null,
      actor_id: principal?.id ?? null,
      method: req.method ?? 'GET',
      path: HUB_PATH,
      route: HUB_PATH,
      status,
      resource_type: null,
      resource_id: null,
      request_id: requestId,
      source_address: forwarded || req.socket.remoteAddress || null,
    });
  }

  private tokenOf(req: IncomingMessage, url: URL): string | undefined {
    return bearerToken(req.headers.authorization) ?? (url.searchParams.get('access_token') || undefined);
  }

  /**
   * The same rules as the API: a valid token, `read`, and a PAT's endpoint list naming the
   * hub. Without a token, the console's session cookie, but only from a page of our own
   * origin: a browser sends the cookie with a WebSocket any site opens to us, and the
   * same-origin policy does not apply to WebSockets (cross-site WebSocket hijacking), so
   * the `Origin` the browser sets must be `Http:PublicBaseUrl`'s.
   */
  private async admit(
    req: IncomingMessage,
    url: URL,
    seen: { principal?: Principal },
  ): Promise<{ principal: Principal; credential: Credential }> {
    if (req.method !== 'GET') throw problems.methodNotAllowed(req.method ?? '', ['GET']);
    const token = this.tokenOf(req, url);
    const sessionSecret = token ? undefined : sessionSecretOf(req);
    if (!token && !sessionSecret) throw problems.unauthorized();
    if (sessionSecret) this.checkOrigin(req);
    const credential: Credential = token ? { token } : { sessionSecret: sessionSecret! };
    const principal = await this.authenticate(credential, { touch: true });
    seen.principal = principal;
    this.authorize(principal);
    return { principal, credential };
  }

  private checkOrigin(req: IncomingMessage): void {
    const origin = req.headers.origin;
    if (origin !== this.publicOrigin) {
      throw problems.forbidden(
        `A WebSocket ${origin ? `from ${origin}` : 'without an Origin'} may not use the console's session; ` +
          'send a bearer token instead.',
      );
    }
  }

  /** `touch: false` on rechecks: an open socket is no activity that keeps a session alive. */
  private async authenticate(credential: Credential, options: { touch: boolean }): Promise<Principal> {
    if ('token' in credential) return this.options.authenticateToken(credential.token);
    const principal = await this.options.sessions?.sessionPrincipal(credential.sessionSecret, options);
    if (!principal) throw problems.unauthorized('The console session has ended or expired; sign in again.');
    return principal;
  }

  private authorize(principal: Principal): void {
    if (!principal.permissions.has('read')) {
      throw problems.forbidden(`Role ${principal.roles.join(', ')} may not subscribe to live updates.`);
    }
    if (principal.allowedEndpoints && !principal.allowedEndpoints.includes(HUB_ENDPOINT)) {
      throw problems.endpointNotAllowed('GET', HUB_PATH);
    }
  }

  /** A refused upgrade answers a problem document before any WebSocket exists; returns its status. */
  private refuse(socket: Duplex, error: unknown, instance: string, requestId: string): number {
    const problem =
      error instanceof Problem
        ? error
        : (this.options.logger.error({ err: error }, 'live updates: upgrade failed'), problems.internal());
    endWithProblem(socket, problem, { errorsBaseUrl: this.options.errorsBaseUrl, instance, requestId });
    return problem.status;
  }

  private run(subscriber: Subscriber): void {
    const { ws } = subscriber;
    this.subscribers.add(subscriber);
    const expiry = this.endAtExpiry(subscriber);
    ws.on('pong', () => (subscriber.alive = true));
    ws.on('close', () => {
      clearTimeout(expiry);
      this.subscribers.delete(subscriber);
    });
    ws.on('error', () => this.subscribers.delete(subscriber));
    ws.on('message', (data, isBinary) => {
      const verdict = subscriber.allowance.admit();
      if (verdict === 'close') return this.cutOff(subscriber, HUB_CLOSE.policyViolation, 'too many messages');
      if (verdict !== 'take') {
        if (verdict === 'drop-and-tell') this.reply(subscriber, { type: 'error', ...RATE_LIMITED });
        return;
      }
      const text = isBinary ? undefined : textOf(data);
      subscriber.handled = subscriber.handled
        .then(() => this.onMessage(subscriber, text))
        .catch((error: unknown) => {
          this.options.logger.error({ err: error }, 'live updates: message failed');
          if (ws.readyState === ws.OPEN)
            ws.send(JSON.stringify({ type: 'error', code: 'internal', message: 'internal error' }));
        });
    });
  }

  private reply(subscriber: Subscriber, message: Record<string, unknown>): void {
    if (subscriber.ws.readyState === subscriber.ws.OPEN) subscriber.ws.send(JSON.stringify(message));
  }

  private async onMessage(subscriber: Subscriber, text: string | undefined): Promise<void> {
    const reply = (message: Record<string, unknown>) => this.reply(subscriber, message);
    const parsed = clientMessage(text);
    if (!parsed.ok) {
      if (subscriber.allowance.malformed())
        return this.cutOff(subscriber, HUB_CLOSE.policyViolation, 'too many malformed messages');
      return reply({ type: 'error', code: 'bad-message', message: parsed.error });
    }
    const message = parsed.message;
    if (message.type === 'ping') return reply({ type: 'pong' });
    if (message.type === 'unsubscribe') {
      const gone = (s: Subscription) =>
        (message.events === undefined || message.events.every((e) => s.events.includes(e))) &&
        (message.subject === undefined || s.subject === message.subject) &&
        (message.rollout === undefined || s.rollout === message.rollout);
      const kept = subscriber.subscriptions.filter((s) => !gone(s));
      subscriber.subscriptions.splice(0, subscriber.subscriptions.length, ...kept);
      return reply({
        type: 'unsubscribed',
        events: message.events ?? null,
        subject: message.subject ?? null,
        ...(message.rollout ? { rollout: message.rollout } : {}),
      });
    }
    await this.subscribe(subscriber, message, reply);
  }

  private async subscribe(
    subscriber: Subscriber,
    message: Subscribe,
    reply: (message: Record<string, unknown>) => void,
  ): Promise<void> {
    if (subscriber.subscriptions.length >= HUB_LIMITS.subscriptions) return reply({ type: 'error', ...TOO_MANY });
    const position = message.since
      ? await resolveSince(this.options.db, subscriber.principal.tenantId, message.since, this.options.replayHours)
      : undefined;
    if (position && !position.ok) return reply({ type: 'error', code: position.code, message: position.message });
    const subscription: Subscription = { events: message.events, subject: message.subject, rollout: message.rollout };
    const subscribed = {
      type: 'subscribed',
      events: message.events,
      subject: message.subject ?? null,
      ...(message.rollout ? { rollout: message.rollout } : {}),
    };
    if (!position) {
      subscriber.subscriptions.push(subscription);
      return reply(subscribed);
    }
    // Live events that arrive during the replay wait for it, so the subscriber reads in order.
    subscriber.held ??= [];
    subscriber.subscriptions.push(subscription);
    reply({ ...subscribed, since: message.since });
    try {
      await this.replay(subscriber, subscription, position.seq);
    } finally {
      const held = subscriber.held ?? [];
      subscriber.held = undefined;
      this.send(subscriber, held);
    }
  }

  private async replay(subscriber: Subscriber, subscription: Subscription, afterSeq: number): Promise<void> {
    const filters = {
      types: subscription.events,
      subject: subscription.subject,
      rollout: subscription.rollout,
      hiddenTypePrefixes: hiddenPrefixes(subscriber.principal),
    };
    for (let after = afterSeq; subscriber.ws.readyState === subscriber.ws.OPEN;) {
      const rows = await listEventsQuery(this.options.db, subscriber.principal.tenantId, {
        ...filters,
        afterSeq: after,
      })
        .orderBy('seq')
        .limit(REPLAY_PAGE)
        .select<EventRow[]>('*');
      for (const row of rows) {
        // A replay may be large: it goes at the pace the subscriber reads, within its allowance.
        if (!(await this.drained(subscriber))) return this.cutOff(subscriber, HUB_CLOSE.slowConsumer, 'slow consumer');
        this.send(subscriber, [new OutgoingEvent(row)]);
      }
      if (rows.length < REPLAY_PAGE) return;
      after = Number(rows.at(-1)!.seq);
    }
  }

  /** Waits until the subscriber has read half its allowance; false if it does not within the grace. */
  private async drained(subscriber: Subscriber): Promise<boolean> {
    const deadline = Date.now() + CLOSE_GRACE_MS;
    while (subscriber.ws.bufferedAmount > this.maxBuffered / 2) {
      if (Date.now() > deadline || subscriber.ws.readyState !== subscriber.ws.OPEN) return false;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return true;
  }

  private heartbeat(): void {
    for (const subscriber of this.subscribers) {
      if (!subscriber.alive) {
        subscriber.ws.terminate();
        this.subscribers.delete(subscriber);
        continue;
      }
      subscriber.alive = false;
      subscriber.ws.ping();
    }
  }

  /** The connection ends when its token does (the periodic recheck covers what a timer cannot hold). */
  private endAtExpiry(subscriber: Subscriber): NodeJS.Timeout | undefined {
    const left = (subscriber.principal.expiresAt ?? Infinity) - Date.now();
    if (left >= MAX_TIMER_MS) return undefined;
    return setTimeout(
      () => this.cutOff(subscriber, HUB_CLOSE.unauthorized, 'the token has expired'),
      Math.max(0, left),
    );
  }

  /**
   * Checks tokens again: all of them (an OIDC token expires, a missed notification), or
   * those of one PAT right after it changed on any replica.
   */
  async recheck(patId?: string): Promise<void> {
    const due = [...this.subscribers].filter((s) => patId === undefined || s.principal.id === patId);
    for (const subscriber of due) {
      try {
        subscriber.principal = await this.authenticate(subscriber.credential, { touch: false });
        this.authorize(subscriber.principal);
      } catch (error) {
        const detail = error instanceof Problem ? error.detail : 'the token could not be checked';
        this.cutOff(subscriber, HUB_CLOSE.unauthorized, detail);
      }
    }
  }

  private cutOff(subscriber: Subscriber, code: number, reason: string): void {
    this.subscribers.delete(subscriber);
    subscriber.ws.close(code, reason.slice(0, 120));
    // The close frame waits behind what the peer has not read (at most the allowance and one
    // event). A peer that reads again within the grace gets the code; one that does not is dropped.
    setTimeout(() => subscriber.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  /**
   * The LISTEN connection was lost and is back: events announced meanwhile never reached
   * us. Subscribers are closed with 1012 (service restart) and replay what they missed by
   * reconnecting with `since`.
   */
  restart(): void {
    for (const subscriber of this.subscribers)
      this.cutOff(subscriber, HUB_CLOSE.restart, 'live updates restarted: reconnect with since');
  }

  /** Closes every subscriber with 1001 (going away); they reconnect to another replica with `since`. */
  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    for (const subscriber of this.subscribers) subscriber.ws.close(HUB_CLOSE.goingAway, 'server shutting down');
    this.subscribers.clear();
    await this.fanning;
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
