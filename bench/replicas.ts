/**
 * Replicas under faults, at fleet scale (issue 30 §1): 3 api processes (REST, hub, agent
 * gateway) and 2 workers on one Postgres and one Temporal dev server, behind HAProxy (HTTP
 * for REST and the hub, TCP passthrough for the agents' TLS), 10,000 simulated agents over
 * mTLS in processes of their own (bench/replicas-agents.ts), 200 hub subscribers following
 * the rollout's events, and REST clients reading the rollout and the agents all along.
 *
 * Two rollouts of 10 batches to every agent: one without faults, then one during which, one
 * after another, an api is killed (-9), a worker is killed (-9), Postgres is restarted and
 * the Temporal server is restarted. Printed: every agent applied each version exactly once
 * (`lost 0, duplicated 0` when it holds), every hub subscriber saw every event of the
 * rollout exactly once after resuming with `since`, how long agents and subscribers took to
 * come back, the status codes and slowest answer REST clients met during each fault, and the
 * rollout's time against the fault-free one.
 *
 *   npm run bench:replicas -- [--agents 10000] [--subscribers 200] [--apis 3] [--workers 2]
 *                             [--batches 10] [--bake 5] [--concurrency 200]
 *
 * Real parts only: embedded Postgres (its own process, restarted by stopping and starting it
 * on the same data directory), the `temporal` CLI's dev server on a SQLite file (restarted the
 * same way), Debian's haproxy (installed when missing, as root), api/main.ts and
 * worker/main.ts as users run them. 10,000 agents need open files: `ulimit -n` ≥ 20,000.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { Knex } from 'knex';
import { createDb, migrateLatest } from '../db/connection';
import { ensureHaproxy, haproxyProcessesFor, startHaproxy, type Replica } from '../scripts/infra/haproxy';
import { spawnPostgres, type PostgresChild } from '../scripts/infra/postgres-child';
import { postgresUrl } from '../scripts/infra/postgres-url';
import { ensureTemporalCli, startTemporal, type RunningTemporal } from '../scripts/infra/temporal';
import { rolloutWorkflowId } from '../workflows/definitions';
import { LiveUpdatesClient, type CloudEvent } from '../scripts/live-updates/client';
import type { AgentsRequest, AgentsStats } from './replicas-agents';
import { benchPat, freePort, openFilesLimits, runBench } from './support';

const { values: args } = parseArgs({
  options: {
    agents: { type: 'string', default: '10000' },
    subscribers: { type: 'string', default: '200' },
    apis: { type: 'string', default: '3' },
    workers: { type: 'string', default: '2' },
    batches: { type: 'string', default: '10' },
    bake: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '200' },
  },
});
const AGENTS = Number(args.agents);
const SUBSCRIBERS = Number(args.subscribers);
const APIS = Number(args.apis);
const WORKERS = Number(args.workers);
const BATCHES = Number(args.batches);
const BAKE_SECONDS = Number(args.bake);
const CONCURRENCY = Number(args.concurrency);
/** Agents per simulator process. */
const AGENTS_PER_PROCESS = 2_500;
/** A request slower than this breaks issue 30's promise (an answer within 2 s, a 503 at worst). */
const SLOW_MS = 2_000;
const ROOT = path.resolve(__dirname, '..');

const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds(timeoutMs)}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

// ---------------------------------------------------------------------------------------
// The installation: Postgres, Temporal, api and worker processes, HAProxy

interface Installation {
  dir: string;
  db: Knex;
  databaseUrl: string;
  postgres: PostgresChild;
  pg: { dataDir: string; port: number };
  temporal: RunningTemporal;
  temporalOptions: Parameters<typeof startTemporal>[0];
  apis: ChildProcess[];
  workers: ChildProcess[];
  /** One HAProxy, or several when one process may not hold every connection (two file descriptors each): as sites run a pair. */
  haproxies: Array<ReturnType<typeof startHaproxy>>;
  base: string;
  /** Each HAProxy's agent port, as agents find them (DNS with several addresses): agent process k uses the k-th, round robin. */
  agentsEndpoints: string[];
  ca: string;
  pat: string;
}

/** Every process the bench started, killed when it exits however it exits (a crash leaves no installation running). */
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(1));

function startNode(script: string, env: Record<string, string>, name: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  // Warnings and errors of the processes are the bench's evidence: kept, with their name.
  child.stderr.setEncoding('utf8').on('data', (d: string) => process.stderr.write(`[${name}] ${d}`));
  return child;
}

async function install(): Promise<Installation> {
  ensureHaproxy(log);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-bench-replicas-'));
  chmodSync(dir, 0o755); // the embedded server may run as the postgres user
  const pg = { dataDir: path.join(dir, 'pg'), port: await freePort() };
  const postgres = await spawnPostgres({ ...pg, database: 'bench' });
  const databaseUrl = postgresUrl(pg.port, 'bench');
  const db = createDb(databaseUrl, 4);
  await migrateLatest(db);
  const pat = await benchPat(db, 'operator', 'bench-replicas');

  const temporalOptions = {
    cli: await ensureTemporalCli(log),
    port: await freePort(),
    dbFile: path.join(dir, 'temporal.sqlite'), // survives a restart, as a real server's store does
  };
  const temporal = await startTemporal(temporalOptions);
  children.push(temporal.process);

  const shared = {
    Environment: 'Production',
    Database__Url: databaseUrl,
    Temporal__Address: temporal.address,
    Temporal__TaskQueue: 'bench-replicas',
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
    Logging__Level: 'warn',
  };
  const lbs = await Promise.all(
    Array.from({ length: haproxyProcessesFor(AGENTS + SUBSCRIBERS + 100, openFilesLimits().hard) }, async () => ({
      http: await freePort(),
      agents: await freePort(),
    })),
  );
  const lb = lbs[0]!;
  const replicas: Replica[] = [];
  const apis: ChildProcess[] = [];
  for (let i = 0; i < APIS; i++) {
    const replica = { http: await freePort(), agents: await freePort() };
    apis.push(
      startNode(
        'api/main.ts',
        {
          ...shared,
          Http__Host: '127.0.0.1',
          Http__Port: String(replica.http),
          Http__PublicBaseUrl: `http://127.0.0.1:${lb.http}`,
          Http__TrustProxy: 'true',
          Agents__Listen: `127.0.0.1:${replica.agents}`,
          Agents__PublicEndpoint: `wss://127.0.0.1:${lb.agents}/v1/opamp`,
        },
        `api${i + 1}`,
      ),
    );
    // One at a time: the first makes the agents' CA, the others read it.
    await until(
      `api${i + 1} ready`,
      async () => ((await fetch(`http://127.0.0.1:${replica.http}/readyz`)).ok ? true : undefined),
      120_000,
    );
    replicas.push(replica);
  }
  const workers = Array.from({ length: WORKERS }, (_, i) => startNode('worker/main.ts', shared, `worker${i + 1}`));
  const haproxies = lbs.map((ports) =>
    startHaproxy(ports, replicas, { maxConnections: Math.ceil((AGENTS + SUBSCRIBERS) / lbs.length) + 1_000 }),
  );
  children.push(...haproxies.map((haproxy) => haproxy.process));
  const base = `http://127.0.0.1:${lb.http}`;
  await until(
    'HAProxy routes to a ready api',
    async () => ((await fetch(`${base}/readyz`)).ok ? true : undefined),
    30_000,
  );
  const { certificate_pem: ca } = await db('agent_ca')
    .where({ active: true })
    .first<{ certificate_pem: string }>('certificate_pem');
  log(
    `${APIS} api and ${WORKERS} worker processes behind HAProxy at ${base}, agents at ${lbs.map((ports) => `:${ports.agents}`).join(' and ')}`,
  );
  return {
    dir,
    db,
    databaseUrl,
    postgres,
    pg,
    temporal,
    temporalOptions,
    apis,
    workers,
    haproxies,
    base,
    agentsEndpoints: lbs.map((ports) => `wss://127.0.0.1:${ports.agents}/v1/opamp`),
    ca,
    pat,
  };
}

async function uninstall(it: Installation): Promise<void> {
  for (const child of [...it.apis, ...it.workers]) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(it.haproxies.map((haproxy) => haproxy.stop()));
  await it.temporal.stop();
  await it.db.destroy().catch(() => {});
  await it.postgres.stop();
  rmSync(it.dir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------
// Clients: REST (through HAProxy), agents, hub subscribers

/** One REST call through HAProxy, as a client makes it; answers with the status (0: no answer within 10 s). */
async function rest(it: Installation, method: string, url: string, body?: unknown) {
  const res = await fetch(`${it.base}${url}`, {
    method,
    headers: { authorization: `Bearer ${it.pat}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = res.headers.get('content-type')?.includes('json');
  return { status: res.status, body: (json ? await res.json() : await res.text()) as any };
}

/** A call the bench itself needs: tried again on a 502/503/504 (a fault) as `Retry-After` says, until it answers. */
async function must(it: Installation, method: string, url: string, body?: unknown, expected = [200, 201]) {
  for (let attempt = 1; ; attempt++) {
    const answer = await rest(it, method, url, body).catch(() => ({ status: 0, body: undefined }));
    if (expected.includes(answer.status)) return answer.body;
    if (![0, 502, 503, 504].includes(answer.status) || attempt > 240)
      throw new Error(`${method} ${url}: ${answer.status} ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The agents, in processes of AGENTS_PER_PROCESS each. */
class Agents {
  private readonly children: ChildProcess[] = [];

  static async start(it: Installation, token: string): Promise<Agents> {
    const agents = new Agents();
    for (let left = AGENTS; left > 0; left -= AGENTS_PER_PROCESS) {
      const child = fork(path.join(__dirname, 'replicas-agents.ts'), { execArgv: ['--import', 'tsx'] });
      agents.children.push(child);
      const count = Math.min(left, AGENTS_PER_PROCESS);
      agents.send(child, {
        type: 'start',
        count,
        endpoint: it.agentsEndpoints[(agents.children.length - 1) % it.agentsEndpoints.length]!,
        ca: it.ca,
        token,
        concurrency: Math.ceil(CONCURRENCY / Math.ceil(AGENTS / AGENTS_PER_PROCESS)),
      });
    }
    return agents;
  }

  private send(child: ChildProcess, request: AgentsRequest): void {
    child.send(request);
  }

  /** Every process's figures, summed; `reset` starts a new tally of outages. */
  async stats(reset = false): Promise<Omit<AgentsStats, 'type'>> {
    const each = await Promise.all(
      this.children.map(
        (child) =>
          new Promise<AgentsStats>((resolve) => {
            const onMessage = (message: AgentsStats) => {
              if (message.type !== 'stats') return;
              child.off('message', onMessage);
              resolve(message);
            };
            child.on('message', onMessage);
            this.send(child, { type: 'stats', reset });
          }),
      ),
    );
    const sum: Omit<AgentsStats, 'type'> = {
      agents: 0,
      enrolled: 0,
      mtls: 0,
      connected: 0,
      running: {},
      applied: 0,
      refused: 0,
      outages: [],
      down: 0,
    };
    for (const one of each) {
      for (const key of ['agents', 'enrolled', 'mtls', 'connected', 'applied', 'refused', 'down'] as const)
        sum[key] += one[key];
      for (const [hash, n] of Object.entries(one.running)) sum.running[hash] = (sum.running[hash] ?? 0) + n;
      sum.outages.push(...one.outages);
    }
    return sum;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map((child) => {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        if (child.exitCode !== null) return Promise.resolve();
        this.send(child, { type: 'stop' });
        return exited;
      }),
    );
  }
}

/**
 * A hub subscriber following one rollout's own events (subject = the rollout), as a console
 * showing it does: cut off (its replica killed, or the replica's LISTEN connection lost), it
 * connects again through HAProxy and resumes with `since` = the last event it got.
 */
class Subscriber {
  readonly seen: string[] = [];
  /** Outages (ms) since the last `takeOutages`. */
  private outages: number[] = [];
  private client: LiveUpdatesClient | undefined;
  private lastEventId: string | undefined;
  private closing = false;

  constructor(
    private readonly it: Installation,
    private readonly rolloutId: string,
  ) {}

  async open(): Promise<void> {
    this.client = await LiveUpdatesClient.connect(this.it.base, this.it.pat, { keepEvents: false });
    this.client.onEvent((event: CloudEvent) => {
      this.seen.push(event.id);
      this.lastEventId = event.id;
    });
    await this.client.subscribe(['rollout.*'], { subject: this.rolloutId, since: this.lastEventId });
    void this.client.closed.then(() => this.reopen());
  }

  private async reopen(): Promise<void> {
    if (this.closing) return;
    const down = Date.now();
    for (let wait = 100; ; wait = Math.min(wait * 2, 2_000)) {
      await new Promise((resolve) => setTimeout(resolve, wait * (0.5 + Math.random())));
      if (this.closing) return;
      try {
        await this.open();
        this.outages.push(Date.now() - down);
        return;
      } catch {
        // not yet: HAProxy has no replica for it, or the replica's database is away
      }
    }
  }

  takeOutages(): number[] {
    const taken = this.outages;
    this.outages = [];
    return taken;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.client?.close();
  }
}

/** What REST clients met during one phase: statuses (0: no answer within 10 s, -1: the connection failed) and the slowest answer. */
interface RestTally {
  statuses: Map<number, number>;
  slowest: number;
  slow: number;
}

/**
 * REST clients through HAProxy, one request after another each, tallied per phase: four
 * read the rollout and pages of agents (Postgres), one pauses and resumes a rollout held
 * until next year (each an Update of its workflow: Temporal).
 */
class RestClients {
  phase = 'before the rollout';
  readonly reads = new Map<string, RestTally>();
  readonly operations = new Map<string, RestTally>();
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly it: Installation,
    rolloutId: string,
    heldRolloutId: string,
  ) {
    const reads = [`/api/rollouts/${rolloutId}`, `/api/rollouts/${rolloutId}/agents?limit=50`, '/api/agents?limit=50'];
    this.loops = Array.from({ length: 4 }, (_, i) => this.readLoop(reads[i % reads.length]!));
    this.loops.push(this.operateLoop(heldRolloutId));
  }

  private async readLoop(url: string): Promise<void> {
    while (this.running) {
      await this.timed(this.reads, async () => {
        const answer = await rest(this.it, 'GET', url);
        this.noteProblem(answer);
        return answer;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Pause, resume, pause…: an operation refused for a fault is tried again. */
  private async operateLoop(rolloutId: string): Promise<void> {
    let next: 'pause' | 'resume' = 'pause';
    while (this.running) {
      const status = await this.timed(this.operations, async () => {
        const answer = await rest(this.it, 'POST', `/api/rollouts/${rolloutId}/${next}`);
        this.noteProblem(answer);
        if (answer.status === 200 && answer.body.state !== (next === 'pause' ? 'paused' : 'scheduled'))
          this.noteProblem({ status: 200, body: { title: `${next} answered`, detail: answer.body.state } });
        return answer;
      });
      // A 409: the rollout is already as asked (an answer lost with a killed api, or the
      // previous run's last operation): the other one is next.
      if (status === 200 || status === 409) next = next === 'pause' ? 'resume' : 'pause';
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  /** Each kind of refusal once, as the client saw it (the status codes alone do not say why). */
  readonly problems = new Set<string>();

  private noteProblem(answer: { status: number; body: any }): void {
    if (answer.status < 400 && answer.status >= 0 && answer.body?.title === undefined) return;
    const line = `${answer.status} ${typeof answer.body === 'object' ? `${answer.body.title}: ${answer.body.detail}` : String(answer.body).slice(0, 80)}`;
    if (!this.problems.has(line)) log(`  a client met ${line}`);
    this.problems.add(line);
  }

  private async timed(tallies: Map<string, RestTally>, call: () => Promise<{ status: number }>): Promise<number> {
    const started = Date.now();
    const status = await call().then(
      (answer) => answer.status,
      (error: Error) => (error.name === 'TimeoutError' ? 0 : -1),
    );
    const took = Date.now() - started;
    const tally = tallies.get(this.phase) ?? { statuses: new Map(), slowest: 0, slow: 0 };
    tallies.set(this.phase, tally);
    tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
    tally.slowest = Math.max(tally.slowest, took);
    tally.slow += Number(took > SLOW_MS);
    return status;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

// ---------------------------------------------------------------------------------------
// A rollout, with or without faults

interface Fault {
  name: string;
  /** Injected once the rollout's current batch is at least this. */
  atBatch: number;
  /** Does it; resolves once the fault is over (the process dead, the server back). */
  inject(): Promise<void>;
}

interface FaultReport {
  name: string;
  atBatch: number;
  /** From the fault until every agent was connected again. */
  agentsBackMs: number;
  agentOutages: number[];
  subscriberOutages: number[];
}

interface RolloutReport {
  version: number;
  contentHash: string;
  rolloutId: string;
  totalMs: number;
  progress: { total: number; succeeded: number; failed: number; skipped: number };
  lost: number;
  duplicated: number;
  notRunning: number;
  events: number;
  subscribersMissing: number;
  subscribersTwice: number;
  faults: FaultReport[];
  reads: Map<string, RestTally>;
  operations: Map<string, RestTally>;
  /** What timed out in the rollout's workflow (its last run): how long a dead worker held a task. */
  timeouts: string[];
}

async function rollout(
  it: Installation,
  agents: Agents,
  target: { configurationId: string; groupId: string; heldRolloutId: string },
  n: number,
  faults: Fault[],
): Promise<RolloutReport> {
  const { configurationId, groupId } = target;
  const version = await must(it, 'POST', `/api/configurations/${configurationId}/versions`, {
    content: `replicas: run ${n}\n`,
  });
  await must(it, 'POST', `/api/configurations/${configurationId}/versions/${version.version}/publish`);
  const created = await must(it, 'POST', '/api/rollouts', {
    configurationId,
    version: version.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: Math.ceil(100 / BATCHES), bakeSeconds: BAKE_SECONDS },
  });
  const subscribers = Array.from({ length: SUBSCRIBERS }, () => new Subscriber(it, created.id));
  for (let i = 0; i < subscribers.length; i += 50) await Promise.all(subscribers.slice(i, i + 50).map((s) => s.open()));
  // What came before the subscriptions (rollout.created) is not theirs to see.
  const before: Array<{ id: string }> = await it.db('events').where({ subject: created.id }).select('id');
  const clients = new RestClients(it, created.id, target.heldRolloutId);
  await agents.stats(true);

  const started = Date.now();
  await must(it, 'POST', `/api/rollouts/${created.id}/start`);
  clients.phase = faults.length ? 'before the faults' : 'during the rollout';
  const state = () => must(it, 'GET', `/api/rollouts/${created.id}`);
  const reports: FaultReport[] = [];
  /** The outages since the last fault began are that fault's (an agent of one fault may be back only during the next). */
  const closeFault = async () => {
    const agentOutages = (await agents.stats(true)).outages;
    const subscriberOutages = subscribers.flatMap((s) => s.takeOutages());
    const last = reports[reports.length - 1];
    if (last) Object.assign(last, { agentOutages, subscriberOutages });
  };
  for (const fault of faults) {
    const now = await until(
      `batch ${fault.atBatch}`,
      async () => {
        const current = await state();
        return current.currentBatch >= fault.atBatch || current.state !== 'running' ? current : undefined;
      },
      600_000,
    );
    if (now.state !== 'running') log(`! ${fault.name}: the rollout is ${now.state} already`);
    log(`${fault.name} (batch ${now.currentBatch})`);
    await closeFault();
    clients.phase = `during ${fault.name}`;
    const at = Date.now();
    await fault.inject();
    await until(
      'agents back',
      async () => ((await agents.stats()).connected === AGENTS ? true : undefined),
      600_000,
      100,
    );
    reports.push({
      name: fault.name,
      atBatch: now.currentBatch,
      agentsBackMs: Date.now() - at,
      agentOutages: [],
      subscriberOutages: [],
    });
  }
  const done = await until(
    'the rollout completes',
    async () => {
      const current = await state();
      if (['failed', 'aborted', 'rolled-back'].includes(current.state))
        throw new Error(`rollout ${current.state}: ${JSON.stringify(current)}`);
      return current.state === 'completed' ? current : undefined;
    },
    1_800_000,
  );
  const totalMs = Date.now() - started;
  await closeFault();
  await clients.stop();

  // Exactly once: one `applied` entry per agent in this rollout's history.
  const applied: Array<{ n: string }> = await it
    .db('agent_history')
    .where({ rollout_id: created.id, kind: 'applied' })
    .groupBy('agent_id')
    .select(it.db.raw('count(*) AS n'));
  const running = await until(
    'every agent runs the version',
    async () => {
      const stats = await agents.stats();
      return stats.running[version.contentHash] === AGENTS ? stats : undefined;
    },
    120_000,
  ).catch(() => agents.stats());
  const expected: Array<{ id: string }> = await it
    .db('events')
    .where({ subject: created.id })
    .andWhereLike('type', 'rollout.%')
    .select('id');
  // Events of the rollout still coming (its `completed`) reach every subscriber.
  await until(
    'subscribers have every event',
    async () => (subscribers.every((s) => new Set(s.seen).size >= expected.length - before.length) ? true : undefined),
    30_000,
  ).catch(() => undefined);
  const ids = new Set(expected.map((row) => row.id));
  for (const row of before) ids.delete(row.id);
  await Promise.all(subscribers.map((s) => s.close()));
  return {
    version: version.version,
    contentHash: version.contentHash,
    rolloutId: created.id,
    totalMs,
    progress: done.progress,
    lost: AGENTS - applied.length,
    duplicated: applied.filter((row) => Number(row.n) > 1).length,
    notRunning: AGENTS - (running.running[version.contentHash] ?? 0),
    events: ids.size,
    subscribersMissing: subscribers.filter((s) => [...ids].some((id) => !s.seen.includes(id))).length,
    subscribersTwice: subscribers.filter((s) => new Set(s.seen).size !== s.seen.length).length,
    faults: reports,
    reads: clients.reads,
    operations: clients.operations,
    timeouts: await workflowTimeouts(it, created.id),
  };
}

/** The workflow and activity tasks of the rollout's workflow that timed out (a worker died holding them), with what they were. */
async function workflowTimeouts(it: Installation, rolloutId: string): Promise<string[]> {
  const connection = await Connection.connect({ address: it.temporal.address });
  try {
    const history = await new Client({ connection }).workflow.getHandle(rolloutWorkflowId(rolloutId)).fetchHistory();
    const scheduled = new Map<string, string>();
    const found: string[] = [];
    for (const event of history.events ?? []) {
      const activity = event.activityTaskScheduledEventAttributes;
      if (activity) scheduled.set(String(event.eventId), activity.activityType?.name ?? '?');
      const timedOut = event.activityTaskTimedOutEventAttributes;
      if (timedOut)
        found.push(
          `activity ${scheduled.get(String(timedOut.scheduledEventId))} (${timedOut.failure?.timeoutFailureInfo?.timeoutType ?? '?'})`,
        );
      if (event.workflowTaskTimedOutEventAttributes)
        found.push(`workflow task (${event.workflowTaskTimedOutEventAttributes.timeoutType ?? '?'})`);
    }
    return found;
  } finally {
    await connection.close();
  }
}

/** A rollout of nobody, started to begin next year: scheduled, its workflow waiting; the REST clients pause and resume it. */
async function heldRollout(it: Installation, configurationId: string): Promise<{ id: string }> {
  const empty = await must(it, 'POST', '/api/groups', { name: `held-${randomUUID().slice(0, 8)}` });
  const version = await must(it, 'POST', `/api/configurations/${configurationId}/versions`, { content: 'held: 1\n' });
  await must(it, 'POST', `/api/configurations/${configurationId}/versions/${version.version}/publish`);
  const held = await must(it, 'POST', '/api/rollouts', {
    configurationId,
    version: version.version,
    target: { groupIds: [empty.id] },
    strategy: { batchPercent: 100 },
    startAt: new Date(Date.now() + 365 * 86_400_000).toISOString(),
  });
  await must(it, 'POST', `/api/rollouts/${held.id}/start`);
  return held;
}

function faultsOf(it: Installation): Fault[] {
  const killed = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  const readyAgain = () =>
    until('the api ready again', async () => ((await fetch(`${it.base}/readyz`)).ok ? true : undefined), 300_000, 100);
  const step = Math.max(1, Math.floor(BATCHES / 5));
  return [
    { name: 'an api killed (-9)', atBatch: step, inject: () => killed(it.apis[0]!) },
    { name: 'a worker killed (-9)', atBatch: 2 * step, inject: () => killed(it.workers[0]!) },
    {
      name: 'Postgres restarted',
      atBatch: 3 * step,
      inject: async () => {
        await it.postgres.stop();
        it.postgres = await spawnPostgres({ ...it.pg, database: 'bench' });
        await readyAgain();
      },
    },
    {
      name: 'Temporal restarted',
      atBatch: 4 * step,
      inject: async () => {
        await it.temporal.stop();
        it.temporal = await startTemporal(it.temporalOptions);
        children.push(it.temporal.process);
        await readyAgain();
      },
    },
  ];
}

// ---------------------------------------------------------------------------------------
// Report

function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function outagesLine(what: string, outages: number[]): string {
  if (!outages.length) return `${what}: none cut off`;
  return `${what}: ${outages.length} cut off, back in p50 ${seconds(percentile(outages, 50))}, p99 ${seconds(percentile(outages, 99))}, max ${seconds(Math.max(...outages))}`;
}

function restLine(what: string, phase: string, tally: RestTally): string {
  const statuses = [...tally.statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status === 0 ? 'no answer' : status === -1 ? 'connection failed' : status} ×${n}`)
    .join(', ');
  return `  ${what}, ${phase}: ${statuses}; slowest ${tally.slowest} ms, ${tally.slow} over ${SLOW_MS} ms`;
}

function print(run: string, report: RolloutReport): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(`\n${run}: rollout of v${report.version} to ${AGENTS} agents in ${BATCHES} batches: ${seconds(report.totalMs)}`);
  out(
    `  progress ${JSON.stringify(report.progress)}; lost ${report.lost}, duplicated ${report.duplicated}; ${report.notRunning} agents not running the version`,
  );
  out(
    `  hub: ${SUBSCRIBERS} subscribers × ${report.events} events of the rollout: ${report.subscribersMissing} missed one, ${report.subscribersTwice} got one twice`,
  );
  for (const fault of report.faults) {
    out(
      `  ${fault.name} at batch ${fault.atBatch}: every agent connected again ${seconds(fault.agentsBackMs)} after it`,
    );
    out(`    ${outagesLine('agents', fault.agentOutages)}`);
    out(`    ${outagesLine('hub subscribers', fault.subscriberOutages)}`);
  }
  for (const [phase, tally] of report.reads) out(restLine('REST reads', phase, tally));
  for (const [phase, tally] of report.operations) out(restLine('pause/resume', phase, tally));
  out(`  timed out in the workflow: ${report.timeouts.join(', ') || 'nothing'}`);
}

// ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const it = await install();
  let agents: Agents | undefined;
  try {
    const group = await must(it, 'POST', '/api/groups', { name: `replicas-${randomUUID().slice(0, 8)}` });
    const token = await must(it, 'POST', '/api/tokens', { name: 'replicas', groupId: group.id, maxUses: AGENTS });
    const configuration = await must(it, 'POST', '/api/configurations', { name: 'replicas', format: 'yaml' });
    const target = {
      configurationId: configuration.id,
      groupId: group.id,
      heldRolloutId: (await heldRollout(it, configuration.id)).id,
    };

    const enrolling = Date.now();
    agents = await Agents.start(it, token.token);
    let said = Date.now();
    await until(
      'every agent connected over mTLS',
      async () => {
        const stats = await agents!.stats();
        if (Date.now() - said > 15_000) {
          said = Date.now();
          log(
            `  enrolled ${stats.enrolled}, connected ${stats.connected}, over mTLS ${stats.mtls}, refused ${stats.refused}`,
          );
        }
        return stats.mtls === AGENTS ? stats : undefined;
      },
      1_800_000,
      1_000,
    );
    log(`${AGENTS} agents enrolled and connected over mTLS in ${seconds(Date.now() - enrolling)}`);

    const calm = await rollout(it, agents, target, 1, []);
    print('Without faults', calm);
    const faulted = await rollout(it, agents, target, 2, faultsOf(it));
    print('With faults', faulted);

    const lost = calm.lost + faulted.lost;
    const duplicated = calm.duplicated + faulted.duplicated;
    process.stdout.write(
      `\nlost ${lost}, duplicated ${duplicated}; hub subscribers missing an event ${faulted.subscribersMissing + calm.subscribersMissing}, getting one twice ${faulted.subscribersTwice + calm.subscribersTwice}\n` +
        `the rollout took ${seconds(faulted.totalMs)} with the faults, ${seconds(calm.totalMs)} without\n` +
        `reproduce: npm run bench:replicas -- --agents ${AGENTS} --subscribers ${SUBSCRIBERS} --apis ${APIS} --workers ${WORKERS} --batches ${BATCHES} --bake ${BAKE_SECONDS}\n`,
    );
  } finally {
    await agents?.stop().catch(() => {});
    await uninstall(it);
  }
}

runBench(main);
