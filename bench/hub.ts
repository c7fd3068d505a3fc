/**
 * Live-updates fan-out: 1,000 subscribers on one api replica (its own process), events
 * produced at a steady rate through another writer of the same database (this process,
 * through the outbox as every change is), in two shapes:
 *   subject  each subscriber watches one object (a console user on one rollout): N events/s in all
 *   all      every subscriber takes every event: N events/s, N × subscribers deliveries/s
 * Prints delivery latency (the event's write → its arrival at a subscriber) p50/p99/max and
 * how many deliveries arrived of those due.
 *
 *   npm run bench:hub [-- --subscribers 1000 --duration 10 --subject-rate 1000 --all-rate 100]
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { emitEvents, type NewEvent } from '../db/repos/events';
import { insertPat } from '../db/repos/pats';
import { ensureTenant } from '../db/repos/tenants';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { LiveUpdatesClient } from '../scripts/live-updates/client';
import { cpuSecondsOfTree, runBench, startBenchDatabase } from './support';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    duration: { type: 'string', default: '10' },
    'subject-rate': { type: 'string', default: '1000' },
    'all-rate': { type: 'string', default: '100' },
  },
});
const subscribers = Number(args.subscribers);
const duration = Number(args.duration);

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function startReplica(databaseUrl: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'hub-server.ts')], {
    env: {
      ...process.env,
      Environment: 'Production',
      Database__Url: databaseUrl,
      Secrets__EncryptionKey: Buffer.alloc(32, 1).toString('base64'),
      Logging__Level: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) => reject(new Error(`hub server exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => child.kill('SIGINT') };
}

interface Shape {
  name: string;
  rate: number;
  /** What each subscriber subscribes to. */
  subject: (i: number) => string | undefined;
  /** The subject of the n-th event produced. */
  eventSubject: (n: number) => string;
  deliveriesPerEvent: number;
}

async function main() {
  const database = await startBenchDatabase(55933);
  const replica = await startReplica(database.url);
  const clients: LiveUpdatesClient[] = [];
  try {
    await ensureTenant(database.db, 'default');
    const token = generateToken('svc-pat');
    await insertPat(database.db, {
      tenant_id: 'default',
      name: 'bench-hub',
      token_hash: hashToken(token),
      role: 'viewer',
      allowed_endpoints: null,
      expires_at: new Date(Date.now() + 86_400_000),
      created_by: 'bench',
    });
    const started = Date.now();
    for (let i = 0; i < subscribers; i += 50) {
      clients.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(50, subscribers - i) }, () => LiveUpdatesClient.connect(replica.url, token)),
        )),
      );
    }
    const lines = [
      `Live-updates fan-out — ${subscribers} subscribers on one replica (connected in ${((Date.now() - started) / 1000).toFixed(1)} s), ${duration} s a shape, ${os.cpus().length} cores, node ${process.version}`,
      `reproduce: npm run bench:hub -- --subscribers ${subscribers} --duration ${duration} --subject-rate ${args['subject-rate']} --all-rate ${args['all-rate']}`,
      '',
      'shape    events/s  deliveries/s   arrived/due        p50 ms   p99 ms   max ms   hub CPU   postgres CPU',
    ];
    const shapes: Shape[] = [
      {
        name: 'subject',
        rate: Number(args['subject-rate']),
        subject: (i) => `s-${i}`,
        eventSubject: (n) => `s-${n % subscribers}`,
        deliveriesPerEvent: 1,
      },
      {
        name: 'all',
        rate: Number(args['all-rate']),
        subject: () => undefined,
        eventSubject: (n) => `s-${n % subscribers}`,
        deliveriesPerEvent: subscribers,
      },
    ];
    for (const shape of shapes) lines.push(await runShape(shape, clients, database, replica.pid));
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    replica.stop();
    await database.stop();
  }
}

async function runShape(
  shape: Shape,
  clients: LiveUpdatesClient[],
  database: Awaited<ReturnType<typeof startBenchDatabase>>,
  replicaPid: number,
): Promise<string> {
  const latencies: number[] = [];
  const unsubscribe = clients.map((client) =>
    client.onEvent((event) => {
      if (event.data.shape === shape.name) latencies.push(Date.now() - (event.data.sentAt as number));
    }),
  );
  await Promise.all(
    clients.map((client, i) => client.subscribe(['configuration.updated'], { subject: shape.subject(i) })),
  );
  const [hub0, pg0] = [cpuSecondsOfTree(replicaPid), database.cpuSeconds()];
  // Every 10 ms, the events due by then, in one transaction (as a busy api writes them).
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
    if (events.length > 0) await database.db.transaction((trx) => emitEvents(trx, events));
    await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  const expected = produced * shape.deliveriesPerEvent;
  const settleBy = Date.now() + 10_000;
  while (latencies.length < expected && Date.now() < settleBy) await new Promise((r) => setTimeout(r, 50));
  const [hub1, pg1] = [cpuSecondsOfTree(replicaPid), database.cpuSeconds()];
  for (const off of unsubscribe) off();
  await Promise.all(clients.map((client) => client.unsubscribe()));
  const sorted = latencies.sort((a, b) => a - b);
  const seconds = duration;
  return [
    shape.name.padEnd(8),
    String(Math.round(produced / seconds)).padStart(8),
    String(Math.round(expected / seconds)).padStart(13),
    `${latencies.length}/${expected}`.padStart(13),
    String(quantile(sorted, 0.5)).padStart(12),
    String(quantile(sorted, 0.99)).padStart(8),
    String(sorted.at(-1) ?? NaN).padStart(8),
    `${(((hub1 - hub0) / seconds) * 100).toFixed(0)} %`.padStart(9),
    `${(((pg1 - pg0) / seconds) * 100).toFixed(0)} %`.padStart(14),
  ].join(' ');
}

runBench(main);
