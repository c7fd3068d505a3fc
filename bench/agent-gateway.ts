/**
 * 10,000 simulated agents on one agent gateway over TLS WebSocket: time to enroll and to be
 * connected over mTLS, an mTLS reconnect of all, p50/p99 heartbeat round trip, one push
 * until every agent's row says APPLIED, the gateway process's resident memory, and then a
 * rollout of the next version to all of them through the api and the rollout workflow
 * (bench/rollout.ts: time to `completed`, history length).
 *
 *   npm run bench:gateway -- [--count 10000] [--per-token 0] [--concurrency 200]
 *                            [--heartbeat 5] [--window 20] [--reconnects 1] [--pool 10] [--timeout 900]
 *                            [--rollout 10] [--stop-only] [--tls-proxy] [--db-port 55438]
 *
 * Real parts: embedded Postgres, the gateway (bench/agent-gateway-server.ts) alone in a
 * child process with the image's runtime (bench/image-runtime.ts; its RSS is the api's share
 * for agents), the simulator (test/support/simulator.ts) in this one. Each agent enrolls
 * with a bootstrap token, sends a CSR, gets its certificate and reconnects with it (mTLS).
 * `--per-token N` issues one token per N agents (0: one token for all) to spread the lock
 * on the token row; `--pool N` is the gateway's Database:PoolMax; `--rollout P` rolls out
 * in batches of P % (0: no rollout phase); `--stop-only` enrols and connects the agents,
 * then stops the replica under them at once (skips the reconnect storms, heartbeats, push,
 * rollout and clean stop). `--db-port` is the embedded Postgres's port (another when the
 * default is taken). `--tls-proxy` puts HAProxy in front, ending the agents' TLS
 * (deploy/haproxy-agents-tls.cfg; Agents:Tls:TerminatedBy on the gateway): the agents reach
 * it, and the report adds HAProxy's CPU and resident memory to the gateway's. The reconnect
 * line says how many TLS handshakes resumed a session; the RSS line, each agent's share above
 * idle, the heap / external split, and how often V8's pooled heap pages were given back
 * (platform/heap-pool.ts).
 * 10,000 TLS sockets need more than 10,000 open files on both sides (`ulimit -n`).
 * BENCH_CPU_PROF=<dir> writes the gateway's CPU profile there; BENCH_QUERIES=1 has the gateway
 * print, at each phase's end, the statements it sent in that phase, most frequent first.
 */
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { pushConfiguration } from '../domain/pushes';
import { insertDraft, publishDraft } from '../db/repos/configuration-versions';
import { insertConfiguration } from '../db/repos/configurations';
import { insertGroup } from '../db/repos/groups';
import { ensureTenant } from '../db/repos/tenants';
import { insertBootstrapToken } from '../db/repos/bootstrap-tokens';
import { startFleet, type Fleet, type FleetStats } from '../scripts/agents/fleet';
import { ensureHaproxy, haproxyProcessesFor, startHaproxy, writeAgentTlsFiles } from '../scripts/infra/haproxy';
import { freePort, waitForPort } from '../scripts/infra/processes';
import { loadOrCreateAgentCa } from '../domain/certificates';
import type { SimulatedAgent } from '../scripts/agents/agent';
import type { AgentMessage } from '../scripts/agents/opamp-client';
import type { GatewayStats } from './agent-gateway-server';
import { rolloutPhase } from './rollout';
import { imageRuntime } from './image-runtime';
import { cpuSecondsOf, openFilesLimits, residentBytesOf, runBench, startBenchDatabase } from './support';

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    'per-token': { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '200' },
    heartbeat: { type: 'string', default: '5' },
    window: { type: 'string', default: '20' },
    reconnects: { type: 'string', default: '1' },
    timeout: { type: 'string', default: '900' },
    pool: { type: 'string', default: '10' },
    rollout: { type: 'string', default: '10' },
    'stop-only': { type: 'boolean', default: false },
    'tls-proxy': { type: 'boolean', default: false },
    'db-port': { type: 'string', default: '55438' },
  },
});
const count = Number(args.count);
const perToken = Number(args['per-token']) || count;
const concurrency = Number(args.concurrency);
const heartbeatSeconds = Number(args.heartbeat);
const windowSeconds = Number(args.window);
/** How many times every agent goes away and reconnects (memory after each round is printed). */
const reconnectRounds = Math.max(1, Number(args.reconnects));
const timeoutMs = Number(args.timeout) * 1000;
const poolMax = Number(args.pool);
const rolloutPercent = Number(args.rollout);
const stopOnly = args['stop-only'];
const tlsProxy = args['tls-proxy'];
/** Where HAProxy connects to the gateway from, the one address its Agents:Tls:TerminatedBy names. */
const PROXY_SOURCE = '127.0.0.2';
const ENCRYPTION_KEY = Buffer.alloc(32, 7);
const TENANT = 'default';
const SERVER_HEARTBEAT_SECONDS = 30;
const MiB = 1024 * 1024;
/** The gateway runs with the image's allocator and V8 settings, as a replica does. */
const runtime = imageRuntime();

// ---------------------------------------------------------------------------------------
// The gateway process

interface Gateway {
  /** Where agents connect: the gateway, or with `--tls-proxy` each HAProxy process (agents spread over them). */
  endpoints: string[];
  /** The gateway's figures, and with `--tls-proxy` HAProxy's at the same moment. */
  stats(reset?: boolean): Promise<Stats>;
  /** Stops the replica with its agents connected; by its own clock, its listener's close() and until it exits (ms). */
  stopWithAgents(): Promise<{ closeMs: number; stopMs: number }>;
  stop(): Promise<void>;
}

type Stats = GatewayStats & { proxy?: { rss: number; cpuSeconds: number } };

async function startGateway(database: { db: Knex; url: string }): Promise<Gateway> {
  const databaseUrl = database.url;
  const child = fork(path.join(__dirname, 'agent-gateway-server.ts'), [], {
    // BENCH_CPU_PROF=<dir> writes the gateway's CPU profile there (as bench/support.ts does)
    execArgv: [
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      ...(process.env.BENCH_GC ? ['--expose-gc'] : []),
      '--import',
      'tsx',
    ],
    env: {
      ...process.env,
      ...runtime.env,
      Environment: 'Development',
      Database__Url: databaseUrl,
      Secrets__EncryptionKey: ENCRYPTION_KEY.toString('base64'),
      Agents__Listen: '127.0.0.1:0',
      ...(tlsProxy ? { Agents__Tls__TerminatedBy: PROXY_SOURCE } : {}),
      Agents__HeartbeatSeconds: String(SERVER_HEARTBEAT_SECONDS),
      Database__PoolMax: String(poolMax),
      Logging__Level: 'silent',
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { type: string; port: number }) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`agent gateway exited (${code})`)));
  });
  const proxy = tlsProxy ? await startTlsProxy(database.db, port) : undefined;
  return {
    endpoints: (proxy?.ports ?? [port]).map((each) => `wss://127.0.0.1:${each}/v1/opamp`),
    stats: (reset = false) =>
      new Promise((resolve) => {
        const onMessage = (message: GatewayStats) => {
          if (message.type !== 'stats') return;
          child.off('message', onMessage);
          resolve({ ...message, proxy: proxy?.stats() });
        };
        child.on('message', onMessage);
        child.send({ type: 'stats', reset });
      }),
    stopWithAgents: async () => {
      const stopped = new Promise<{ closeMs: number; stopMs: number }>((resolve) => {
        const onMessage = (message: { type: string; closeMs: number; stopMs: number }) => {
          if (message.type !== 'stopped') return;
          child.off('message', onMessage);
          resolve(message);
        };
        child.on('message', onMessage);
      });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      const times = await stopped;
      await exited;
      return times;
    },
    stop: async () => {
      await proxy?.stop();
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(guard);
    },
  };
}

/**
 * `--tls-proxy`: HAProxy ending the agents' TLS in front of the gateway on `gatewayPort`, with
 * a certificate the agents' CA issued (as `fleet issue-proxy-certificate` does): as many
 * processes as this machine's open files limit needs (each proxied agent holds two files in
 * HAProxy); their ports, their memory and CPU together, and their stop.
 */
async function startTlsProxy(db: Knex, gatewayPort: number) {
  ensureHaproxy((line) => progress(line));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-tls-proxy-'));
  const files = await writeAgentTlsFiles(await loadOrCreateAgentCa(db, ENCRYPTION_KEY), dir);
  const processes = haproxyProcessesFor(count + 100, openFilesLimits().hard);
  const ports = await Promise.all(Array.from({ length: processes }, () => freePort()));
  const haproxies = ports.map((port) =>
    startHaproxy({ agents: port }, [{ agents: gatewayPort }], {
      maxConnections: Math.ceil(count / processes) + 1_000,
      agentTls: { ...files, source: PROXY_SOURCE },
    }),
  );
  await Promise.all(
    haproxies.map((haproxy, i) => waitForPort('127.0.0.1', ports[i]!, 30_000, haproxy.process, 'HAProxy')),
  );
  const pids = haproxies.map((haproxy) => haproxy.process.pid!);
  const sum = (each: (pid: number) => number) => pids.reduce((total, pid) => total + each(pid), 0);
  return {
    ports,
    stats: () => ({ rss: sum(residentBytesOf), cpuSeconds: sum((pid) => cpuSecondsOf({ pid })) }),
    stop: async () => {
      await Promise.all(haproxies.map((haproxy) => haproxy.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------
// Seed: tenant, group, bootstrap tokens, one published configuration

async function seedTokens(db: Knex): Promise<{ tokens: string[]; groupId: string }> {
  await ensureTenant(db, TENANT);
  const group = await insertGroup(db, TENANT, { name: 'bench-gateway', description: '', labels: {} });
  const tokens: string[] = [];
  for (let i = 0; i < Math.ceil(count / perToken); i++) {
    const token = generateToken('svc-bt');
    await insertBootstrapToken(db, {
      tenant_id: TENANT,
      name: `bench-${i}`,
      token_hash: hashToken(token),
      group_id: group.id,
      pool_id: null,
      expires_at: new Date(Date.now() + 86_400_000),
      max_uses: perToken,
      created_by: 'bench',
    });
    tokens.push(token);
  }
  return { tokens, groupId: group.id };
}

async function publishVersion(db: Knex): Promise<{ configurationId: string; version: number; hash: string }> {
  const content = `receivers:\n  otlp:\n    protocols:\n      grpc: {}\nexporters:\n  debug: {}\nservice:\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n# bench ${Date.now()}\n`;
  const hash = createHash('sha256').update(content, 'utf8').digest('hex');
  return db.transaction(async (trx) => {
    const configuration = await insertConfiguration(trx, {
      tenant_id: TENANT,
      name: 'bench-collector',
      description: '',
      format: 'yaml',
      labels: {},
    });
    const { version } = await insertDraft(trx, configuration.id, { content, content_hash: hash, author: 'bench' });
    await publishDraft(trx, configuration.id, version.version, 'bench');
    return { configurationId: configuration.id, version: version.version, hash };
  });
}

// ---------------------------------------------------------------------------------------
// Measuring

/** CPU seconds of this machine's postgres processes (the embedded server is the only one). */
const postgresCpuSeconds = () => cpuSecondsOf({ name: 'postgres' });

const benchCpuSeconds = () => {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1e6;
};

/** CPU seconds spent by each party during a phase. */
interface PhaseCpu {
  gateway: number;
  postgres: number;
  simulator: number;
  /** HAProxy's, with `--tls-proxy`. */
  proxy?: number;
  ms: number;
}

async function cpuOf<T>(gateway: Gateway, work: () => Promise<T>): Promise<Measured<T>> {
  const sample = async () => {
    const stats = await gateway.stats();
    return {
      gateway: stats.cpuSeconds,
      proxy: stats.proxy?.cpuSeconds,
      postgres: postgresCpuSeconds(),
      simulator: benchCpuSeconds(),
    };
  };
  const before = await sample();
  const started = Date.now();
  const result = await work();
  const ms = Date.now() - started;
  const after = await sample();
  return {
    result,
    cpu: {
      gateway: after.gateway - before.gateway,
      postgres: after.postgres - before.postgres,
      simulator: after.simulator - before.simulator,
      ...(after.proxy !== undefined ? { proxy: after.proxy - before.proxy! } : {}),
      ms,
    },
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
const progress = (text: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${text}\n`);

/** Polls `done` every `everyMs`; the time from `since` when it first holds. */
async function until(
  what: string,
  done: () => boolean | Promise<boolean>,
  since: number,
  everyMs = 100,
  report?: () => string,
): Promise<number> {
  let lastReport = Date.now();
  for (;;) {
    if (await done()) return Date.now() - since;
    if (Date.now() - since > timeoutMs)
      throw new Error(`${what}: not within ${timeoutMs / 1000} s${report ? ` (${report()})` : ''}`);
    if (report && Date.now() - lastReport >= 5000) {
      progress(`${what}: ${report()}`);
      lastReport = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

function fleetLine(fleet: Fleet): string {
  const s = fleet.stats();
  return `enrolled=${s.enrolled} connected=${s.connected} mtls=${s.mtls} certificates=${s.certificates} refused=${s.refused} errors=${s.errors}`;
}

async function onlineRows(db: Knex): Promise<number> {
  return Number(((await db('agents').count({ n: '*' }).where({ status: 'online' }).first()) as { n: string }).n);
}

const connectedOverMtls = (fleet: Fleet) => fleet.agents.every((agent) => agent.state.mtls && agent.state.connected);

/**
 * Heartbeat round trips: every agent switches to `heartbeatSeconds`, at a random moment
 * within one interval (so they stay spread), then for `windowSeconds` each heartbeat is
 * timed from send to reply. Replies come one per message, in order, so a FIFO of send
 * times per agent pairs them (no push runs meanwhile).
 */
async function heartbeatWindow(
  fleet: Fleet,
): Promise<{ samples: number[]; offered: number; windowMs: number; drainMs: number; lostToCloses: number }> {
  const switching = fleet.agents.map(
    (agent) =>
      new Promise<void>((resolve) =>
        setTimeout(
          () => (agent.setHeartbeatSeconds(heartbeatSeconds), resolve()),
          Math.random() * heartbeatSeconds * 1000,
        ),
      ),
  );
  await Promise.all(switching);
  await new Promise((resolve) => setTimeout(resolve, heartbeatSeconds * 1000)); // one full interval at the new pace
  const samples: number[] = [];
  let offered = 0;
  let lostToCloses = 0;
  let measuring = true;
  const detach: Array<() => void> = [];
  const queues: Array<unknown[]> = [];
  for (const agent of fleet.agents) {
    const sent: Array<{ at: number; heartbeat: boolean }> = [];
    const onSent = (message: AgentMessage) => {
      const heartbeat = isHeartbeat(message);
      if (heartbeat && measuring) offered++;
      sent.push({ at: performance.now(), heartbeat: heartbeat && measuring });
    };
    const onMessage = () => {
      const request = sent.shift();
      if (request?.heartbeat) samples.push(performance.now() - request.at);
    };
    // A closed connection answers nothing more: its outstanding messages are dropped (and counted).
    const onClosed = () => {
      lostToCloses += sent.length;
      sent.length = 0;
    };
    queues.push(sent);
    agent.on('sent', onSent);
    agent.on('message', onMessage);
    agent.on('closed', onClosed);
    detach.push(() => (agent.off('sent', onSent), agent.off('message', onMessage), agent.off('closed', onClosed)));
  }
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, windowSeconds * 1000));
  measuring = false;
  const windowMs = performance.now() - started;
  // Back to the server's pace, then wait until every message sent has its reply: a backlog
  // left on the gateway would otherwise be measured as part of the push.
  for (const agent of fleet.agents) agent.setHeartbeatSeconds(SERVER_HEARTBEAT_SECONDS);
  const drainStarted = Date.now();
  const drainMs = await until(
    'heartbeat backlog',
    () => queues.every((queue) => queue.length === 0),
    drainStarted,
    200,
    () => `${queues.reduce((n, q) => n + q.length, 0)} replies outstanding`,
  );
  for (const off of detach) off();
  return { samples, offered, windowMs, drainMs, lostToCloses };
}

/** The agents' last errors, most frequent first (network errors are followed by a reconnect). */
function errorTally(fleet: Fleet): string {
  const tally = new Map<string, number>();
  for (const { state } of fleet.agents)
    if (state.lastError) tally.set(state.lastError, (tally.get(state.lastError) ?? 0) + 1);
  return [...tally]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([error, n]) => `${n}× ${error}`)
    .join('; ');
}

function isHeartbeat(message: AgentMessage): boolean {
  return (
    !message.agentDescription &&
    !message.remoteConfigStatus &&
    !message.connectionSettingsRequest &&
    !message.agentDisconnect &&
    !message.effectiveConfig
  );
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! : NaN;
}

/** CPU seconds of each party over a phase, and as a share of one core (200 % = both cores). */
function cpu(c: PhaseCpu): string {
  const share = (used: number, ms: number) => `${used.toFixed(1)} (${((used / ms) * 100_000).toFixed(0)} %)`;
  const proxy = c.proxy === undefined ? '' : `, HAProxy ${share(c.proxy, c.ms)}`;
  return `CPU s over ${seconds(c.ms)}: gateway ${share(c.gateway, c.ms)}${proxy}, postgres ${share(c.postgres, c.ms)}, simulator ${share(c.simulator, c.ms)}`;
}

const loop = (s: GatewayStats) =>
  `gateway event-loop delay p99 ${s.loopDelay.p99.toFixed(0)} ms, max ${s.loopDelay.max.toFixed(0)} ms`;

/**
 * The replica stops under its connected agents (as on SIGTERM): how long until the process
 * exited, its listener's close(), and until every agent saw its socket close (how many with
 * 1001); then how many rows still say online (none should: the replica is gone).
 */
async function stopReplica(gw: Gateway, f: Fleet, db: Knex): Promise<string> {
  const closeCodes: number[] = [];
  for (const agent of f.agents) agent.once('closed', ({ code }: { code: number }) => closeCodes.push(code));
  const started = Date.now();
  const { closeMs, stopMs } = await gw.stopWithAgents();
  const replicaStopMs = Date.now() - started;
  // The agents (in this busy process) may see their sockets end a little after the replica exited.
  const allToldMs = await until('agents closed', () => closeCodes.length === count, started, 10);
  const goingAway = closeCodes.filter((code) => code === 1001).length;
  const online = await onlineRows(db);
  return `stop replica with ${count} agents connected: ${seconds(stopMs)} by its own clock until it exits (listener close() ${seconds(closeMs)}); seen exited by the bench after ${seconds(replicaStopMs)}, every agent's socket closed after ${seconds(allToldMs)} (this busy process), ${goingAway} of them with 1001; rows still online after the stop: ${online}`;
}

// ---------------------------------------------------------------------------------------
// The phases

/** What the bench has started so far, so that the clean-up stops whatever a failed phase left running. */
interface Running {
  gateway?: Gateway;
  fleet?: Fleet;
}

/** A phase's result and the CPU each party spent on it. */
interface Measured<T> {
  result: T;
  cpu: PhaseCpu;
}

/** The seeded database and the idle gateway, with what an agent needs to reach it. */
interface SetUp {
  db: Knex;
  databaseUrl: string;
  gw: Gateway;
  tokens: string[];
  groupId: string;
  idle: Stats;
  ca: string;
  /** The agents spread over these (one without `--tls-proxy`). */
  endpoints: string[];
}

/** The open files limit, which must hold every agent's socket (and some): refused before anything starts. */
function checkOpenFiles(): number {
  const fds = openFilesLimits().soft;
  if (fds < count + 1000)
    throw new Error(
      `open files limit ${fds} is too low for ${count} agents: raise it (ulimit -n ${count + 2000}) in the shell that runs the bench`,
    );
  return fds;
}

/** Set-up: the tenant, group and bootstrap tokens, then the gateway process (its idle stats). */
async function setUp(database: { db: Knex; url: string }, running: Running): Promise<SetUp> {
  const db = database.db;
  const { tokens, groupId } = await seedTokens(db);
  const gw = (running.gateway = await startGateway(database));
  const idle = await gw.stats(true);
  const ca = (
    (await db('agent_ca').select('certificate_pem').where({ active: true }).first()) as { certificate_pem: string }
  ).certificate_pem;
  const endpoints = gw.endpoints;
  progress(
    `gateway on ${endpoints.join(' and ')}, rss ${mib(idle.rss)}; starting ${count} agents (${tokens.length} token(s), concurrency ${concurrency})`,
  );
  return { db, databaseUrl: database.url, gw, tokens, groupId, idle, ca, endpoints };
}

/** Phase 1's figures: the fleet connected over mTLS, and how it got there. */
interface Connected {
  fleet: Fleet;
  connecting: Measured<{ enrolledMs: number; mtlsMs: number }>;
  afterConnect: Stats;
  connectStats: FleetStats;
  connectErrors: string;
  dbEnrolled: number;
}

/** Phase 1: every agent enrols (token + CSR) and reconnects with its certificate. */
async function connectAgents({ db, gw, tokens, ca, endpoints }: SetUp, running: Running): Promise<Connected> {
  const connecting = await cpuOf(gw, async () => {
    const started = Date.now();
    const f = (running.fleet = startFleet({
      count,
      endpoint: endpoints[0]!,
      ca,
      connectConcurrency: concurrency,
      agentOptions: (i) => ({ token: tokens[i % tokens.length], endpoint: endpoints[i % endpoints.length] }),
    }));
    const enrolledMs = await until(
      'enrolment',
      () => f.agents.every((a) => a.state.enrolled || a.state.refused),
      started,
      200,
      () => fleetLine(f),
    );
    const mtlsMs = await until(
      'mTLS',
      () => connectedOverMtls(f),
      started,
      200,
      () => fleetLine(f),
    );
    return { enrolledMs, mtlsMs };
  });
  const f = running.fleet!;
  const afterConnect = await gw.stats(true);
  const connectStats = f.stats();
  const connectErrors = errorTally(f);
  const dbEnrolled = await onlineRows(db);
  progress(`all connected over mTLS: ${fleetLine(f)}; rss ${mib(afterConnect.rss)}`);
  return { fleet: f, connecting, afterConnect, connectStats, connectErrors, dbEnrolled };
}

/**
 * Every agent away (a clean stop, until no row says online), then back with its certificate
 * only: how long the stop took, and the reconnect until all are connected over mTLS.
 */
async function reconnectAll(
  gw: Gateway,
  f: Fleet,
  db: Knex,
): Promise<{
  stopMs: number;
  reconnecting: Measured<number>;
  handshakes: GatewayStats['handshakes'];
  writes: Writes;
}> {
  const stopStarted = Date.now();
  await Promise.all(f.agents.map((agent) => agent.stop()));
  const stopMs = Date.now() - stopStarted;
  await until('offline', async () => (await onlineRows(db)) === 0, stopStarted, 500);
  const before = (await gw.stats()).handshakes;
  const { result: reconnecting, writes } = await writesDuring(db, () =>
    cpuOf(gw, async () => {
      const started = Date.now();
      void Promise.all(f.agents.map((agent: SimulatedAgent) => agent.start()));
      return until(
        'mTLS reconnect',
        () => connectedOverMtls(f),
        started,
        200,
        () => fleetLine(f),
      );
    }),
  );
  const after = (await gw.stats()).handshakes;
  return {
    stopMs,
    reconnecting,
    handshakes: { total: after.total - before.total, resumed: after.resumed - before.resumed },
    writes,
  };
}

/** Phase 2's figures: the last round's reconnect, the gateway after it, its RSS after each round. */
interface Reconnected {
  reconnecting: Measured<number>;
  /** The last round's TLS handshakes, and how many resumed a session. */
  handshakes: GatewayStats['handshakes'];
  /** Postgres's commits and rows written during the last round. */
  writes: Writes;
  afterReconnect: Stats;
  rssAfterRounds: number[];
}

/** Phase 2: `--reconnects` rounds of everyone away, then back at once (a reconnect storm after a restart). */
async function reconnectStorms(gw: Gateway, f: Fleet, db: Knex): Promise<Reconnected> {
  const rssAfterRounds: number[] = [];
  let reconnecting!: Measured<number>;
  let handshakes!: GatewayStats['handshakes'];
  let writes!: Reconnected['writes'];
  let afterReconnect!: Stats;
  for (let round = 0; round < reconnectRounds; round++) {
    ({ reconnecting, handshakes, writes } = await reconnectAll(gw, f, db));
    afterReconnect = await gw.stats(true);
    rssAfterRounds.push(afterReconnect.rss);
  }
  progress(
    `reconnected over mTLS in ${seconds(reconnecting.result)}; heartbeat window (${heartbeatSeconds} s, ${windowSeconds} s)`,
  );
  return { reconnecting, handshakes, writes, afterReconnect, rssAfterRounds };
}

/** Postgres's commits and rows written (every statement outside a transaction commits). */
interface Writes {
  commits: number;
  rows: number;
}

/**
 * What `work` answers, and Postgres's commits and rows written while it ran, over `ms` (its
 * lead-in and the wait after it): backends publish their statistics at most once a second, so
 * they are read a moment after the work.
 */
async function writesDuring<T>(
  db: Knex,
  work: () => Promise<T>,
): Promise<{ result: T; writes: Writes & { ms: number } }> {
  const before = await databaseWrites(db);
  const started = Date.now();
  const result = await work();
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const after = await databaseWrites(db);
  return {
    result,
    writes: { commits: after.commits - before.commits, rows: after.rows - before.rows, ms: Date.now() - started },
  };
}

/** Postgres's commits and rows written so far (cumulative statistics of every database). */
async function databaseWrites(db: Knex): Promise<Writes> {
  const [row] = (
    await db.raw(
      'SELECT sum(xact_commit)::bigint AS commits, sum(tup_inserted + tup_updated + tup_deleted)::bigint AS rows FROM pg_stat_database',
    )
  ).rows;
  return { commits: Number(row.commits), rows: Number(row.rows) };
}

/** Phase 3's figures: the heartbeat window, the gateway after it, the round trips sorted, the writes. */
interface Heartbeats {
  heartbeats: Measured<Awaited<ReturnType<typeof heartbeatWindow>>>;
  afterHeartbeats: Stats;
  rtt: number[];
  /** Postgres commits and rows written during the window (its lead-in and drain too), over `ms`. */
  writes: Writes & { ms: number };
}

/** Phase 3: heartbeat round trips at `--heartbeat` seconds over a `--window` (see heartbeatWindow). */
async function measureHeartbeats(gw: Gateway, f: Fleet, db: Knex): Promise<Heartbeats> {
  const { result: heartbeats, writes } = await writesDuring(db, () => cpuOf(gw, () => heartbeatWindow(f)));
  const afterHeartbeats = await gw.stats(true);
  const rtt = [...heartbeats.result.samples].sort((a, b) => a - b);
  return { heartbeats, afterHeartbeats, rtt, writes };
}

/** Phase 4's figures: the configuration pushed, the push's times, the gateway after it. */
interface Pushed {
  configurationId: string;
  pushing: Measured<{ pushed: number; committedMs: number; clientMs: number; appliedMs: number }>;
  afterPush: Stats;
}

/** Phase 4: one push of a new version to all, until every agent's row says APPLIED. */
async function pushToAll(gw: Gateway, f: Fleet, db: Knex): Promise<Pushed> {
  const { configurationId, version, hash } = await publishVersion(db);
  const ids = f.agents.map((agent) => agent.id);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await gw.stats(true);
  progress(`pushing ${hash.slice(0, 12)} to ${ids.length} agents`);
  const pushing = await cpuOf(gw, async () => {
    const started = Date.now();
    const pushed = await db.transaction((trx) =>
      pushConfiguration(trx, { tenantId: TENANT, agentIds: ids, configurationId, version }),
    );
    const committedMs = Date.now() - started;
    let clientMs = 0;
    const appliedMs = await until(
      'push',
      async () => {
        if (!clientMs && f.agents.every((a) => a.state.lastConfigHash === hash && a.state.appliedStatus === 'APPLIED'))
          clientMs = Date.now() - started;
        const row = (await db('agents')
          .count({ n: '*' })
          .where({ applied_hash: hash, applied_status: 'APPLIED' })
          .first()) as { n: string };
        return Number(row.n) === count;
      },
      started,
      100,
      () => `agents applied (client side): ${f.agents.filter((a) => a.state.appliedStatus === 'APPLIED').length}`,
    );
    return { pushed: pushed.agentIds.length, committedMs, clientMs: clientMs || appliedMs, appliedMs };
  });
  const afterPush = await gw.stats(true);
  return { configurationId, pushing, afterPush };
}

/** Phase 5: a rollout of the next version to all, batch by batch (bench/rollout.ts); no lines with `--rollout 0`. */
async function rolloutToAll(
  { databaseUrl, db, gw, groupId }: SetUp,
  f: Fleet,
  configurationId: string,
): Promise<string[]> {
  return rolloutPercent > 0
    ? rolloutPhase({
        databaseUrl,
        db,
        fleet: f,
        groupId,
        configurationId,
        batchPercent: rolloutPercent,
        timeoutMs,
        gatewayCpuSeconds: async () => (await gw.stats()).cpuSeconds,
        progress,
      })
    : [];
}

/** Phase 6: every agent says goodbye (agent_disconnect, close); how long that took. */
async function stopAll(f: Fleet): Promise<number> {
  const stopAllStarted = Date.now();
  await f.stop();
  return Date.now() - stopAllStarted;
}

// ---------------------------------------------------------------------------------------
// The report

/** The report's first lines: what ran, how to reproduce it, and on what. */
function headerLines({ tokens }: SetUp, fds: number): string[] {
  return [
    `Agent gateway — ${count} agents over TLS WebSocket (CSR → mTLS), one gateway process (${runtime.description})${tlsProxy ? ' behind HAProxy ending the TLS (processes as the open files limit needs)' : ''}, ${os.cpus().length} cores, node ${process.version}`,
    `reproduce: npm run bench:gateway -- --count ${count} --per-token ${args['per-token']} --concurrency ${concurrency} --pool ${poolMax} --heartbeat ${heartbeatSeconds} --window ${windowSeconds} --reconnects ${reconnectRounds} --rollout ${rolloutPercent}${stopOnly ? ' --stop-only' : ''}${tlsProxy ? ' --tls-proxy' : ''}`,
    `(${tokens.length} bootstrap token(s); gateway pool ${poolMax} connections (Database:PoolMax); open files limit ${fds}; the simulator runs in the bench process on the same cores)`,
    '',
  ];
}

/** Phase 1's lines: enrolment and mTLS connection rates, CPU, the agents' last errors. */
function connectLines({ connecting, afterConnect, connectStats, connectErrors, dbEnrolled }: Connected): string[] {
  const { enrolledMs, mtlsMs } = connecting.result;
  return [
    `enrol (token, first message, CSR → certificate)   all ${count} in ${seconds(enrolledMs)}  (${(count / (enrolledMs / 1000)).toFixed(0)} agents/s)`,
    `connected over mTLS (incl. enrolment)             all in ${seconds(mtlsMs)}  (${(count / (mtlsMs / 1000)).toFixed(0)} agents/s); online rows ${dbEnrolled}, errors ${connectStats.errors}, refused ${connectStats.refused}`,
    `  ${cpu(connecting.cpu)}; ${loop(afterConnect)}`,
    ...(connectErrors ? [`  agents' last errors: ${connectErrors}`] : []),
  ];
}

/** Phases 2 to 4's lines (reconnect, heartbeats, push), then the gateway's RSS along the way. */
function measuredLines(
  { idle }: SetUp,
  { afterConnect }: Connected,
  { reconnecting, handshakes, writes: stormWrites, afterReconnect, rssAfterRounds }: Reconnected,
  stopMs: number,
  { heartbeats, afterHeartbeats, rtt, writes }: Heartbeats,
  { pushing, afterPush }: Pushed,
): string[] {
  const hb = heartbeats.result;
  const thousands = count / 1000;
  const perAgent = (bytes: number) => (bytes / count / 1024).toFixed(0);
  const written = (n: number) => (n / (writes.ms / 1000) / thousands).toFixed(1);
  const cpuMs = (cpuSeconds: number) => ((cpuSeconds * 1000) / (heartbeats.cpu.ms / 1000) / thousands).toFixed(1);
  return [
    `mTLS reconnect of all (after a clean stop, ${seconds(stopMs)})  all in ${seconds(reconnecting.result)}  (${(count / (reconnecting.result / 1000)).toFixed(0)} agents/s); ${tlsProxy ? 'TLS at HAProxy' : `${handshakes.total} TLS handshakes, ${handshakes.resumed} of them resumed a session`}; Postgres ${stormWrites.commits} commits (${(stormWrites.commits / count).toFixed(2)} an agent), ${stormWrites.rows} rows written`,
    `  ${cpu(reconnecting.cpu)}; ${loop(afterReconnect)}`,
    `heartbeat every ${heartbeatSeconds} s, ${(hb.windowMs / 1000).toFixed(0)} s window: ${rtt.length} of ${hb.offered} answered, ${(rtt.length / (hb.windowMs / 1000)).toFixed(0)} heartbeats/s` +
      ` (offered ${(count / heartbeatSeconds).toFixed(0)}/s; backlog drained ${seconds(hb.drainMs)} after the window; ${hb.lostToCloses} unanswered because their connection closed); round trip p50 ${percentile(rtt, 0.5).toFixed(1)} ms, p99 ${percentile(rtt, 0.99).toFixed(1)} ms, max ${rtt.length ? rtt[rtt.length - 1]!.toFixed(1) : '-'} ms`,
    `  ${cpu(heartbeats.cpu)}; ${loop(afterHeartbeats)}`,
    `  steady state per 1,000 agents at this heartbeat: Postgres ${written(writes.commits)} commits/s and ${written(writes.rows)} rows written/s; CPU ms/s: gateway ${cpuMs(heartbeats.cpu.gateway)}, Postgres ${cpuMs(heartbeats.cpu.postgres)}`,
    `push to ${pushing.result.pushed}: committed in ${pushing.result.committedMs} ms, all APPLIED on the agents in ${seconds(pushing.result.clientMs)}, all APPLIED in the database in ${seconds(pushing.result.appliedMs)}`,
    `  ${cpu(pushing.cpu)}; ${loop(afterPush)}`,
    ...proxyMemoryLines(idle, afterConnect, afterReconnect, afterHeartbeats, afterPush),
    `gateway RSS: idle ${mib(idle.rss)}, all connected ${mib(afterConnect.rss)} (${perAgent(afterConnect.rss - idle.rss)} KiB an agent above idle; heap ${mib(afterConnect.heapUsed)}, external ${mib(afterConnect.external)} of which array buffers ${mib(afterConnect.arrayBuffers)}), after the reconnect ${rssAfterRounds.map(mib).join(' → ')} (${afterReconnect.sessions} sessions, ${perAgent(afterReconnect.rss - idle.rss)} KiB an agent; heap ${mib(afterReconnect.heapUsed)}), after the heartbeats ${mib(afterHeartbeats.rss)}, after the push ${mib(afterPush.rss)} (heap ${mib(afterPush.heapUsed)}), peak ${mib(afterPush.peakRss)} (sampled every second); V8's heap pool released ${afterPush.heapPool.releases} times (${afterPush.heapPool.ms.toFixed(0)} ms in all)`,
  ];
}

/** With `--tls-proxy`: HAProxy's resident memory along the way, and the two processes' together. */
function proxyMemoryLines(
  idle: Stats,
  connected: Stats,
  reconnected: Stats,
  heartbeats: Stats,
  pushed: Stats,
): string[] {
  if (!idle.proxy) return [];
  const proxy = (stats: Stats) => stats.proxy!.rss;
  const both = (stats: Stats) => mib(stats.rss + proxy(stats));
  const perAgent = ((proxy(connected) - proxy(idle)) / count / 1024).toFixed(0);
  return [
    `HAProxy RSS: idle ${mib(proxy(idle))}, all connected ${mib(proxy(connected))} (${perAgent} KiB an agent above idle), after the reconnect ${mib(proxy(reconnected))}, after the heartbeats ${mib(proxy(heartbeats))}, after the push ${mib(proxy(pushed))}`,
    `gateway + HAProxy RSS: all connected ${both(connected)}, after the heartbeats ${both(heartbeats)}, after the push ${both(pushed)}`,
  ];
}

// ---------------------------------------------------------------------------------------

async function main() {
  const fds = checkOpenFiles();
  const database = await startBenchDatabase(Number(args['db-port']));
  const running: Running = {};
  try {
    const setup = await setUp(database, running);
    const { db, gw } = setup;

    // 1. enrol (token + CSR) and reconnect with the certificate
    const connected = await connectAgents(setup, running);
    const f = connected.fleet;
    const header = headerLines(setup, fds);
    if (stopOnly) {
      process.stdout.write(`${[...header, ...connectLines(connected), await stopReplica(gw, f, db)].join('\n')}\n`);
      return;
    }

    // 2. everyone away, then back with the certificate only (a reconnect storm after a restart)
    const reconnected = await reconnectStorms(gw, f, db);
    // 3. heartbeats
    const heartbeats = await measureHeartbeats(gw, f, db);
    // 4. one push to all
    const pushed = await pushToAll(gw, f, db);
    // 5. a rollout of the next version to all, batch by batch (bench/rollout.ts)
    const rolloutLines = await rolloutToAll(setup, f, pushed.configurationId);
    // 6. goodbye
    const stopAllMs = await stopAll(f);

    // 7. back, then the replica stops under them: every agent should be told 1001 at once.
    // The reconnect line prints this last reconnect's stop time, as it did before main was split.
    const { stopMs } = await reconnectAll(gw, f, db);
    const lines = [
      ...header,
      ...connectLines(connected),
      ...measuredLines(setup, connected, reconnected, stopMs, heartbeats, pushed),
      ...rolloutLines,
      `stop all (agent_disconnect, close): ${seconds(stopAllMs)}`,
      await stopReplica(gw, f, db),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    if (running.fleet)
      await Promise.race([running.fleet.stop(), new Promise((resolve) => setTimeout(resolve, 30_000))]);
    await running.gateway?.stop();
    await database.stop();
  }
}

runBench(main);
