/**
 * A share of bench/hub.ts's subscribers, in a process of its own (as a real deployment's
 * clients are on other machines): the bench's producer and its timestamps then wait for no
 * client's parsing. Driven over IPC by bench/hub.ts; each event is parsed by the repo's
 * client, as any subscriber's is, and checked: each subscriber's events arrive in the order
 * they were produced (`data.n` rises), none twice, none it did not ask for, none lost.
 *
 * Latency is the event's `data.sentAt` (the producer's clock just before its transaction)
 * to the moment the client has parsed it, in whole milliseconds.
 */
import { LiveUpdatesClient, type CloudEvent } from '../scripts/live-updates/client';

export type ClientsRequest =
  | { type: 'connect'; url: string; token: string; count: number }
  | { type: 'subscribe'; shape: string; subjects: Array<string | null> }
  | { type: 'finish'; expected: number[]; settleMs: number }
  | { type: 'close' };

export type ClientsReply = { type: 'connected' } | { type: 'subscribed' } | { type: 'finished'; result: ShapeResult };

export interface ShapeResult {
  /** [latency ms, deliveries] pairs. */
  histogram: Array<[number, number]>;
  arrived: number;
  /** Deliveries due that never came. */
  lost: number;
  /** Deliveries out of order or twice (`data.n` did not rise). */
  disordered: number;
  /** Events of another subject than the subscriber asked for. */
  unwanted: number;
}

/** One subscriber's record of the shape being measured. */
interface Tally {
  subject: string | null;
  lastN: number;
  count: number;
}

const CONNECT_AT_ONCE = 50;
let clients: LiveUpdatesClient[] = [];
let tallies: Tally[] = [];
let shape = '';
let histogram = new Map<number, number>();
let disordered = 0;
let unwanted = 0;

function record(tally: Tally, event: CloudEvent): void {
  const parsedAt = Date.now();
  const data = event.data as { shape: string; n: number; sentAt: number };
  if (data.shape !== shape) return;
  if (data.n <= tally.lastN) disordered++;
  if (tally.subject !== null && event.subject !== tally.subject) unwanted++;
  tally.lastN = data.n;
  tally.count++;
  const latency = parsedAt - data.sentAt;
  histogram.set(latency, (histogram.get(latency) ?? 0) + 1);
}

async function connect(url: string, token: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += CONNECT_AT_ONCE) {
    const batch = Array.from({ length: Math.min(CONNECT_AT_ONCE, count - i) }, () =>
      LiveUpdatesClient.connect(url, token, { keepEvents: false }),
    );
    clients.push(...(await Promise.all(batch)));
  }
  tallies = clients.map(() => ({ subject: null, lastN: -1, count: 0 }));
  clients.forEach((client, i) => client.onEvent((event) => record(tallies[i]!, event)));
}

async function subscribe(name: string, subjects: Array<string | null>): Promise<void> {
  shape = name;
  histogram = new Map();
  disordered = 0;
  unwanted = 0;
  tallies = subjects.map((subject) => ({ subject, lastN: -1, count: 0 }));
  await Promise.all(
    clients.map((client, i) => client.subscribe(['configuration.updated'], { subject: subjects[i] ?? undefined })),
  );
}

async function finish(expected: number[], settleMs: number): Promise<ShapeResult> {
  const settleBy = Date.now() + settleMs;
  const missing = () => tallies.some((tally, i) => tally.count < expected[i]!);
  while (missing() && Date.now() < settleBy) await new Promise((resolve) => setTimeout(resolve, 20));
  const result: ShapeResult = {
    histogram: [...histogram],
    arrived: tallies.reduce((sum, tally) => sum + tally.count, 0),
    lost: tallies.reduce((sum, tally, i) => sum + Math.max(0, expected[i]! - tally.count), 0),
    disordered,
    unwanted,
  };
  shape = '';
  await Promise.all(clients.map((client) => client.unsubscribe()));
  return result;
}

async function handle(request: ClientsRequest): Promise<ClientsReply | undefined> {
  switch (request.type) {
    case 'connect':
      await connect(request.url, request.token, request.count);
      return { type: 'connected' };
    case 'subscribe':
      await subscribe(request.shape, request.subjects);
      return { type: 'subscribed' };
    case 'finish':
      return { type: 'finished', result: await finish(request.expected, request.settleMs) };
    case 'close':
      await Promise.all(clients.map((client) => client.close()));
      clients = [];
      process.exit(0);
  }
}

process.on('message', (request: ClientsRequest) => {
  handle(request).then(
    (reply) => reply && process.send!(reply),
    (error: unknown) => {
      process.stderr.write(`bench clients failed: ${(error as Error).stack}\n`);
      process.exit(1);
    },
  );
});
