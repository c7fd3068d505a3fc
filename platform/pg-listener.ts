import { Client } from 'pg';
import type { Logger } from 'pino';
import { letGo } from './pg-session';

type Handler = (payload: string) => void;

/**
 * One dedicated connection that LISTENs on channels and reconnects after a failure.
 * Notifications sent while it was down are lost, so handlers get `onReconnect` to resync.
 */
export class PgListener {
  private client?: Client;
  private readonly handlers = new Map<string, Set<Handler>>();
  private closed = false;
  private retry?: NodeJS.Timeout;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly onReconnect: () => void = () => {},
  ) {}

  async start(): Promise<void> {
    const client = new Client({ connectionString: this.url, application_name: 'fleet-config-listener' });
    client.on('notification', (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? '');
    });
    client.on('error', (error) => this.reconnectLater(error));
    client.on('end', () => this.reconnectLater());
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN "${channel}"`);
    this.client = client;
  }

  async listen(channel: string, handler: Handler): Promise<void> {
    const known = this.handlers.has(channel);
    if (!known) this.handlers.set(channel, new Set());
    this.handlers.get(channel)!.add(handler);
    if (!known && this.client) await this.client.query(`LISTEN "${channel}"`);
  }

  async notify(channel: string, payload: string): Promise<void> {
    await this.client?.query('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  private reconnectLater(error?: Error) {
    if (this.closed || this.retry) return;
    if (error) this.logger.warn({ err: error }, 'LISTEN connection lost; reconnecting');
    const old = this.client;
    this.client = undefined;
    if (old) void letGo(old);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.start()
        .then(() => this.onReconnect())
        .catch((err: Error) => this.reconnectLater(err));
    }, 1000);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) await letGo(client);
  }
}
