/**
 * Live-updates fan-out: 1,000 subscribers on one api replica (its own process), events
 * produced at a steady rate through another writer of the same database (this process,
 * through the outbox as every change is), in two shapes:
 *   subject  each subscriber watches one object (a console user on one rollout): N events/s in all
 *   all      every subscriber takes every event: N events/s, N × subscribers deliveries/s
 *
 * The subscribers run in --client-processes child processes (bench/hub-clients.ts), as a
 * real deployment's clients run elsewhere: this process only produces, so neither the
 * producer's ticks nor its timestamps wait behind the parsing of 100,000 messages a second.
 * Each delivery is checked there: per subscriber in production order, none twice, none of
 * another subject, none lost. Latency is the event's `data.sentAt` (taken here just before
 * its transaction, so it includes the insert and the commit) to the moment a subscriber's
 * client has parsed it; p50/p99/max over every delivery. CPU shares are of one core over the
 * shape's production time.
 *
 *   npm run bench:hub [-- --subscribers 1000 --duration 10 --subject-rate 1000 --all-rate 100 --client-processes 2]
 *
 * BENCH_CPU_PROF=<dir> writes the replica's CPU profile there.
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { emitEvents, type NewEvent } from '../db/repos/events';
import type { ClientsReply, ClientsRequest, ShapeResult } from './hub-clients';
import { benchPat, cpuSecondsOf, cpuSecondsOfTree, runBench, startApiProcess, startBenchDatabase } from './support';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    duration: { type: 'string', default: '10' },
    'subject-rate': { type: 'string', default: '1000' },
    'all-rate': { type: 'string', default: '100' },
    'client-processes': { type: 'string', default: '2' },
  },
});
const subscribers = Number(args.subscribers);
const duration = Number(args.duration);
const clientProcesses = Number(args['client-processes']);

/** The latency below which a share `q` of the deliveries arrived, from [ms, count] pairs. */
function quantile(histogram: Array<[number, number]>, q: number): number {
  const sorted = [...histogram].sort(([a], [b]) => a - b);
  const total = sorted.reduce((sum, [, count]) => sum + count, 0);
  let seen = 0;
  for (const [ms, count] of sorted) if ((seen += count) > q * total) return ms;
  return sorted.at(-1)?.[0] ?? NaN;
}

const loadAverage = () => os.loadavg()[0]!.toFixed(2);

/** One child process of subscribers (bench/hub-clients.ts), asked one thing at a time. */
class ClientProcess {
  private readonly child: ChildProcess;
  private readonly replies: Array<{ resolve: (reply: ClientsReply) => void; reject: (error: Error) => void }> = [];

  constructor(readonly count: number) {
    this.child = fork(path.join(__dirname, 'hub-clients.ts'), { execArgv: ['--import', 'tsx'] });
    this.child.on('message', (reply: ClientsReply) => this.replies.shift()?.resolve(reply));
    // A process that dies fails the bench rather than leaving it waiting for an answer.
    this.child.once('exit', (code) => {
      for (const { reject } of this.replies.splice(0)) reject(new Error(`bench clients exited (${code})`));
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  ask<T extends ClientsReply['type']>(request: ClientsRequest): Promise<Extract<ClientsReply, { type: T }>> {
    const reply = new Promise<ClientsReply>((resolve, reject) => this.replies.push({ resolve, reject }));
    this.child.send(request);
    return reply as Promise<Extract<ClientsReply, { type: T }>>;
  }

  close(): Promise<void> {
    if (this.child.exitCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send({ type: 'close' } satisfies ClientsRequest);
    return exited;
  }
}

interface Shape {
  name: string;
  rate: number;
  /** What the i-th subscriber subscribes to (null: every event). */
  subject: (i: number) => string | null;
  /** The subject of the n-th event produced. */
  eventSubject: (n: number) => string;
}

async function main() {
  const database = await startBenchDatabase(55933);
  const replica = await startApiProcess(database.url);
  const perProcess = Math.ceil(subscribers / clientProcesses);
  const groups = Array.from(
    { length: clientProcesses },
    (_, p) => new ClientProcess(Math.max(0, Math.min(perProcess, subscribers - p * perProcess))),
  );
  try {
    const token = await benchPat(database.db, 'viewer', 'bench-hub');
    const started = Date.now();
    await Promise.all(
      groups.map((group) => group.ask({ type: 'connect', url: replica.url, token, count: group.count })),
    );
    const lines = [
      `Live-updates fan-out — ${subscribers} subscribers on one replica in ${clientProcesses} client process(es) (connected in ${((Date.now() - started) / 1000).toFixed(1)} s), ${duration} s a shape, ${os.cpus().length} cores, node ${process.version}, load average ${loadAverage()} at the start`,
      `reproduce: npm run bench:hub -- --subscribers ${subscribers} --duration ${duration} --subject-rate ${args['subject-rate']} --all-rate ${args['all-rate']} --client-processes ${clientProcesses}`,
      '',
      'shape    events/s  deliveries/s   arrived/due      lost disordered  p50 ms  p99 ms  max ms   hub CPU  clients CPU  postgres CPU',
    ];
    const shapes: Shape[] = [
      {
        name: 'subject',
        rate: Number(args['subject-rate']),
        subject: (i) => `s-${i}`,
        eventSubject: (n) => `s-${n % subscribers}`,
      },
      { name: 'all', rate: Number(args['all-rate']), subject: () => null, eventSubject: (n) => `s-${n % subscribers}` },
    ];
    for (const shape of shapes) lines.push(await runShape(shape, groups, database, replica.pid));
    lines.push('', `load average ${loadAverage()} at the end`);
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(groups.map((group) => group.close()));
    await replica.stop();
    await database.stop();
  }
}

/** Produces the shape's events at its rate for the duration, in 10 ms ticks; returns how many. */
async function produce(shape: Shape, db: Awaited<ReturnType<typeof startBenchDatabase>>['db']): Promise<number> {
  const tickMs = 10;
  let produced = 0;
  const start = Date.now();
  while (Date.now() - start < duration * 1000) {
    const due = Math.floor(((Date.now() - start) / 1000) * shape.rate);
    const events: NewEvent[] = [];
    for (; produced < due; produced++) {
      events.push({
        tenantId: 'default',
        type: 'configuration.updated',
        source: '/bench',
        subject: shape.eventSubject(produced),
        data: { shape: shape.name, n: produced, sentAt: Date.now() },
      });
    }
    // The events due by now in one transaction, as a busy api writes them.
    if (events.length > 0) await db.transaction((trx) => emitEvents(trx, events));
    await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  return produced;
}

async function runShape(
  shape: Shape,
  groups: ClientProcess[],
  database: Awaited<ReturnType<typeof startBenchDatabase>>,
  replicaPid: number,
): Promise<string> {
  const subjectsOf = (group: number) => {
    const first = groups.slice(0, group).reduce((sum, g) => sum + g.count, 0);
    return Array.from({ length: groups[group]!.count }, (_, i) => shape.subject(first + i));
  };
  await Promise.all(
    groups.map((group, g) => group.ask({ type: 'subscribe', shape: shape.name, subjects: subjectsOf(g) })),
  );
  const clientsCpu = () => groups.reduce((sum, group) => sum + cpuSecondsOf({ pid: group.pid }), 0);
  const [hub0, clients0, pg0] = [cpuSecondsOfTree(replicaPid), clientsCpu(), database.cpuSeconds()];
  const produced = await produce(shape, database.db);
  const [hub1, clients1, pg1] = [cpuSecondsOfTree(replicaPid), clientsCpu(), database.cpuSeconds()];
  /** How many of the produced events the subscriber with that subject is due. */
  const perSubject = new Map<string, number>();
  for (let n = 0; n < produced; n++)
    perSubject.set(shape.eventSubject(n), (perSubject.get(shape.eventSubject(n)) ?? 0) + 1);
  /** How many of the produced events a subscriber to that subject (null: every one) is due. */
  const due = (subject: string | null) => (subject === null ? produced : (perSubject.get(subject) ?? 0));
  const results = await Promise.all(
    groups.map((group, g) =>
      group.ask<'finished'>({ type: 'finish', expected: subjectsOf(g).map(due), settleMs: 10_000 }),
    ),
  );
  const total = results.reduce<ShapeResult>(
    (sum, { result }) => ({
      histogram: [...sum.histogram, ...result.histogram],
      arrived: sum.arrived + result.arrived,
      lost: sum.lost + result.lost,
      disordered: sum.disordered + result.disordered,
      unwanted: sum.unwanted + result.unwanted,
    }),
    { histogram: [], arrived: 0, lost: 0, disordered: 0, unwanted: 0 },
  );
  const expected = total.arrived + total.lost;
  const share = (seconds: number) => `${((seconds / duration) * 100).toFixed(0)} %`;
  return [
    shape.name.padEnd(8),
    String(Math.round(produced / duration)).padStart(8),
    String(Math.round(expected / duration)).padStart(13),
    `${total.arrived}/${expected}`.padStart(13),
    String(total.lost).padStart(9),
    String(total.disordered + total.unwanted).padStart(10),
    String(quantile(total.histogram, 0.5)).padStart(7),
    String(quantile(total.histogram, 0.99)).padStart(7),
    String(quantile(total.histogram, 1)).padStart(7),
    share(hub1 - hub0).padStart(9),
    share(clients1 - clients0).padStart(12),
    share(pg1 - pg0).padStart(13),
  ].join(' ');
}

runBench(main);
