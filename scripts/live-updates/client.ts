/**
 * A small typed client of the live-updates hub (`/hubs/live-updates`, docs/events.md): used by
 * `npm run watch`, the tests and the benches. It remembers the last event's id, so a
 * reconnect can resume with `since`.
 */
import WebSocket, { type RawData } from 'ws';

function textOf(data: RawData): string {
  return Array.isArray(data)
    ? Buffer.concat(data).toString('utf8')
    : (Buffer.isBuffer(data) ? data : Buffer.from(data)).toString('utf8');
}

export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject?: string;
  /** Extension attribute: the rollout the event belongs to. */
  rollout?: string;
  time: string;
  datacontenttype: 'application/json';
  tenant: string;
  data: Record<string, unknown>;
}

export type ControlMessage =
  | { type: 'subscribed'; events: string[]; subject: string | null; since?: string }
  | { type: 'unsubscribed'; events: string[] | null; subject: string | null }
  | { type: 'pong' }
  | { type: 'error'; code: string; message: string };

export interface SubscribeOptions {
  subject?: string;
  /** One rollout's events, its agents' too. */
  rollout?: string;
  /** The id of the last event already seen: the hub replays what came after it first. */
  since?: string;
}

export class HubRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly problem: unknown,
  ) {
    super(`the hub refused the connection: ${status}`);
  }
}

export class LiveUpdatesClient {
  /** Every event received, in order (empty when connected with `keepEvents: false`). */
  readonly events: CloudEvent[] = [];
  lastEventId: string | undefined;
  /** Resolves when the connection closes, with the hub's close code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiting: Array<(message: ControlMessage) => void> = [];
  private readonly listeners = new Set<(event: CloudEvent) => void>();

  private constructor(
    private readonly ws: WebSocket,
    private readonly keepEvents: boolean,
  ) {
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    ws.on('message', (data) => this.receive(JSON.parse(textOf(data)) as CloudEvent | ControlMessage));
  }

  /**
   * Opens a connection; `tokenInQuery` sends the token as `access_token` (for clients that
   * cannot set headers, like browsers' WebSocket). `keepEvents: false` keeps no history in
   * `events` (a long-lived watcher or a bench reads them through `onEvent`).
   */
  static connect(
    baseUrl: string,
    token: string,
    options: { tokenInQuery?: boolean; keepEvents?: boolean } = {},
  ): Promise<LiveUpdatesClient> {
    const url = new URL('/hubs/live-updates', baseUrl.replace(/^http/, 'ws'));
    if (options.tokenInQuery) url.searchParams.set('access_token', token);
    const headers = options.tokenInQuery ? {} : { authorization: `Bearer ${token}` };
    const ws = new WebSocket(url, { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new LiveUpdatesClient(ws, options.keepEvents ?? true)));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        // A problem from the hub; a proxy in front (HAProxy's 503 page) answers in HTML.
        const json = /[/+]json\b/.test(res.headers['content-type'] ?? '');
        res.on('end', () =>
          reject(
            new HubRefusedError(res.statusCode ?? 0, body && json ? (JSON.parse(body) as unknown) : body || undefined),
          ),
        );
      });
      ws.once('error', reject);
    });
  }

  /** Calls `listener` for every event from now on. */
  onEvent(listener: (event: CloudEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Subscribes; resolves with the hub's `subscribed`, rejects with its `error`. */
  subscribe(events: string[], options: SubscribeOptions = {}): Promise<ControlMessage> {
    return this.request({ type: 'subscribe', events, ...options });
  }

  unsubscribe(events?: string[], subject?: string): Promise<ControlMessage> {
    return this.request({ type: 'unsubscribe', events, subject });
  }

  ping(): Promise<ControlMessage> {
    return this.request({ type: 'ping' });
  }

  /** Sends anything (tests send garbage); the hub's answer is the next control message. */
  request(message: unknown): Promise<ControlMessage> {
    const reply = new Promise<ControlMessage>((resolve) => this.waiting.push(resolve));
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
    return reply.then((answer) => {
      if (answer.type === 'error') throw Object.assign(new Error(`${answer.code}: ${answer.message}`), answer);
      return answer;
    });
  }

  /** Stops reading (a slow consumer, for tests): the socket's data piles up in the kernel and the hub. */
  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    this.ws.resume();
  }

  close(): Promise<{ code: number; reason: string }> {
    this.ws.close();
    return this.closed;
  }

  private receive(message: CloudEvent | ControlMessage): void {
    if ('specversion' in message) {
      if (this.keepEvents) this.events.push(message);
      this.lastEventId = message.id;
      for (const listener of this.listeners) listener(message);
    } else {
      this.waiting.shift()?.(message);
    }
  }
}
