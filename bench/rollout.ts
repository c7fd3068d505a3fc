/**
 * The rollout phase of bench/agent-gateway.ts (`--rollout`, on by default): with the fleet
 * still connected after the push phase, one published configuration version rolled out to
 * the whole group through the real api and rollout workflow, in batches of 10 % with no
 * bake. Measures the wall time from `POST /api/rollouts/{id}/start` to `completed`, each
 * batch's push → last report, and the workflow's history length (over every run, should it
 * continue as new).
 *
 * Real parts: the Temporal dev server (in memory, its own port), a worker in a child process
 * (worker/main.ts, its own task queue, so its CPU is its own), the api in this process
 * (createApp with a Temporal client, on 127.0.0.1:0) with an operator PAT written straight
 * to the database (as `npm run fleet -- create-pat` does).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import pino from 'pino';
import { createApp, type FleetApp } from '../api/app';
import { httpServer } from '../api/http/server';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { loadSettings } from '../platform/settings';
import { createTemporal } from '../platform/temporal';
import { createDb } from '../db/connection';
import { insertPat } from '../db/repos/pats';
import { ensureTemporalCli, startTemporal, type RunningTemporal } from '../scripts/infra/temporal';
import type { Fleet } from '../scripts/agents/fleet';
import { rolloutWorkflowId } from '../workflows/definitions';
import { cpuSecondsOf, freePort } from './support';
import type { Progress } from '../domain/rollouts';

const TENANT = 'default';
/** Where the bench stops polling: a final state, or a pause (an agent failed). */
const STOP_STATES = ['completed', 'failed', 'aborted', 'rolled-back', 'paused'];

export interface RolloutPhaseInput {
  databaseUrl: string;
  db: Knex;
  fleet: Fleet;
  groupId: string;
  /** The configuration the push phase published version 1 of; the rollout publishes the next. */
  configurationId: string;
  batchPercent: number;
  timeoutMs: number;
  /** CPU seconds of the gateway process so far. */
  gatewayCpuSeconds: () => Promise<number>;
  progress: (text: string) => void;
}

/** Runs the phase and answers the lines to print. */
export async function rolloutPhase(input: RolloutPhaseInput): Promise<string[]> {
  const stack = await startRolloutStack(input.databaseUrl, input.progress);
  try {
    return await measureRollout(stack, input);
  } finally {
    await stack.stop();
  }
}

// ---------------------------------------------------------------------------------------
// Temporal, the worker, the api

export interface RolloutStack {
  baseUrl: string;
  temporal: ReturnType<typeof createTemporal>;
  temporalPid: number;
  workerPid: number;
  taskQueue: string;
  stop(): Promise<void>;
}

export async function startRolloutStack(databaseUrl: string, progress: (text: string) => void): Promise<RolloutStack> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch(() => {});
  };
  try {
    const cli = await ensureTemporalCli(progress);
    const server: RunningTemporal = await startTemporal({ cli, port: await freePort() }); // in memory, headless
    stops.push(() => server.stop());
    const taskQueue = `bench-rollouts-${randomBytes(4).toString('hex')}`;
    const env = {
      Environment: 'Development', // the gateway's too: the same (development) encryption key
      Database__Url: databaseUrl,
      Temporal__Address: server.address,
      Temporal__TaskQueue: taskQueue,
      Git__FileRoots: tmpdir(), // bench:git-webhook's bare repository is there
    };
    const started = Date.now();
    const worker = await startWorkerProcess({ ...env, Logging__Level: 'info' });
    stops.push(() => worker.stop());
    progress(
      `temporal on ${server.address}, worker (pid ${worker.pid}) polling ${taskQueue} after ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );

    const settings = loadSettings({ ...env, Logging__Level: 'silent' });
    const db = createDb(databaseUrl, settings.database.poolMax);
    stops.push(() => db.destroy());
    const temporal = createTemporal(settings);
    stops.push(() => temporal.connection.close());
    const app: FleetApp = await createApp({
      settings,
      db,
      logger: pino({ level: 'silent' }),
      temporal: temporal.client,
      temporalHealthy: temporal.healthy,
    });
    stops.push(() => app.close());
    const http: Server = httpServer(app, settings.errorsBaseUrl);
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    stops.push(() => (http.closeAllConnections(), new Promise((resolve) => http.close(resolve))));
    return {
      baseUrl: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
      temporal,
      temporalPid: server.process.pid!,
      workerPid: worker.pid,
      taskQueue,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** worker/main.ts in a child process; resolves once it logs that it is running. */
async function startWorkerProcess(env: Record<string, string>): Promise<{ pid: number; stop(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, '..', 'worker', 'main.ts')],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      let entry: { level?: number; msg?: string } = {};
      try {
        entry = JSON.parse(line);
      } catch {
        // not ours
      }
      if (entry.msg === 'worker running') resolve();
      else if ((entry.level ?? 0) >= 40) process.stderr.write(`worker: ${line}\n`); // warn and above
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code})`)));
  });
  return {
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(guard);
    },
  };
}

// ---------------------------------------------------------------------------------------
// The rollout

export type Reply = { status: number; body: any; ms: number; etag?: string };

/** What the bench reads of `GET /api/rollouts/{id}`. */
export interface RolloutBody {
  state: string;
  currentBatch: number;
  reason: string | null;
  progress: Progress;
  strategy: { applyTimeoutSeconds: number };
}

export type Api = (method: string, url: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply>;

async function measureRollout(stack: RolloutStack, input: RolloutPhaseInput): Promise<string[]> {
  const { db, fleet, progress } = input;
  const api = await operatorApi(stack.baseUrl, db);

  // The next version, through the api
  const { configurationId } = input;
  const content = `receivers:\n  otlp:\n    protocols:\n      grpc: {}\nexporters:\n  debug:\n    verbosity: basic\nservice:\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n# bench rollout ${Date.now()}\n`;
  const { version, hash } = await publishVersion(api, configurationId, content);

  const created = must(
    'create rollout',
    await api('POST', '/api/rollouts', {
      configurationId,
      version,
      target: { groupIds: [input.groupId] },
      strategy: { batchPercent: input.batchPercent },
    }),
    201,
  );
  const id = created.body.id as string;
  progress(`rollout ${id}: ${created.body.progress.total} agents, created in ${created.ms.toFixed(0)} ms; starting`);

  const cpuBefore = await cpuNow(stack, input);
  const started = Date.now();
  const start = must('start', await api('POST', `/api/rollouts/${id}/start`), 200);
  const rollout = await pollUntilSettled(api, id, started, input);
  const wallMs = Date.now() - started;
  const cpuAfter = await cpuNow(stack, input);
  progress(`rollout ${rollout.state} after ${seconds(wallMs)}`);

  const history = await workflowHistory(stack.temporal.client, id);
  const batches = await batchTimes(db, id);
  const onAgents = fleet.agents.filter(
    (agent) => agent.state.lastConfigHash === hash && agent.state.appliedStatus === 'APPLIED',
  ).length;
  const inDb = Number(
    (
      (await db('agents').count({ n: '*' }).where({ applied_hash: hash, applied_status: 'APPLIED' }).first()) as {
        n: string;
      }
    ).n,
  );
  const p = rollout.progress;
  const share = (key: keyof Cpu) => {
    const used = cpuAfter[key] - cpuBefore[key];
    return `${used.toFixed(1)} (${((used / wallMs) * 100_000).toFixed(0)} %)`;
  };
  return [
    `rollout of version ${version} to ${fleet.agents.length} agents (group target, batchPercent ${input.batchPercent}, bakeSeconds 0, applyTimeoutSeconds ${rollout.strategy.applyTimeoutSeconds}):` +
      ` created in ${created.ms.toFixed(0)} ms, start answered in ${start.ms.toFixed(0)} ms`,
    `  ${rollout.state} ${seconds(wallMs)} after the start call (polled every 250 ms; started_at → finished_at in the database ${seconds(batches.databaseMs)}); ${batches.lines.length} batches${rollout.reason ? `; reason: ${rollout.reason}` : ''}`,
    `  progress: succeeded ${p.succeeded}, failed ${p.failed}, skipped ${p.skipped}, pending ${p.pending}, applying ${p.applying} of ${p.total}; APPLIED on the agents ${onAgents}, in the database ${inDb}`,
    `  workflow ${history.workflowId}: history ${history.events} events in ${history.runs.length} run(s) (${history.runs.join(', ')})`,
    `  CPU s over ${seconds(wallMs)}: gateway ${share('gateway')}, postgres ${share('postgres')}, worker ${share('worker')}, temporal ${share('temporal')}, api + simulator ${share('bench')}`,
    ...batches.lines,
  ];
}

/** A PAT of `role` (operator unless said) written to the database (as `npm run fleet -- create-pat` does), and calls with it. */
export async function operatorApi(baseUrl: string, db: Knex, role: 'operator' | 'admin' = 'operator'): Promise<Api> {
  const token = generateToken('svc-pat');
  await insertPat(db, {
    tenant_id: TENANT,
    name: `bench-${role}-${randomBytes(3).toString('hex')}`,
    token_hash: hashToken(token),
    role,
    allowed_endpoints: null,
    expires_at: new Date(Date.now() + 86_400_000),
    created_by: 'bench',
  });
  return async (method, url, body, headers = {}) => {
    const started = performance.now();
    const response = await fetch(baseUrl + url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : undefined,
      ms: performance.now() - started,
      etag: response.headers.get('etag') ?? undefined,
    };
  };
}

/** Saves `content` as a draft of the configuration and publishes it, through the api. */
export async function publishVersion(
  api: Api,
  configurationId: string,
  content: string,
): Promise<{ version: number; hash: string }> {
  const draft = must(
    'save draft',
    await api('POST', `/api/configurations/${configurationId}/versions`, { content }),
    201,
  );
  must(
    'publish',
    await api('POST', `/api/configurations/${configurationId}/versions/${draft.body.version}/publish`),
    200,
  );
  return { version: draft.body.version as number, hash: draft.body.contentHash as string };
}

export function must(what: string, reply: Reply, status: number): Reply {
  if (reply.status !== status) throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply;
}

/** `GET /api/rollouts/{id}` every 250 ms until the rollout stops (a final state or a pause). */
export async function pollUntilSettled(
  api: Api,
  id: string,
  started: number,
  input: { timeoutMs: number; progress: (text: string) => void },
): Promise<RolloutBody> {
  let lastReport = Date.now();
  for (;;) {
    const rollout = must('get rollout', await api('GET', `/api/rollouts/${id}`), 200).body as RolloutBody;
    if (STOP_STATES.includes(rollout.state)) return rollout;
    if (Date.now() - started > input.timeoutMs)
      throw new Error(
        `rollout: not finished within ${input.timeoutMs / 1000} s (${rollout.state}, ${JSON.stringify(rollout.progress)})`,
      );
    if (Date.now() - lastReport >= 5000) {
      input.progress(`rollout: ${rollout.state}, batch ${rollout.currentBatch}, ${JSON.stringify(rollout.progress)}`);
      lastReport = Date.now();
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type Cpu = Record<'gateway' | 'postgres' | 'worker' | 'temporal' | 'bench', number>;

async function cpuNow(stack: RolloutStack, input: RolloutPhaseInput): Promise<Cpu> {
  const own = process.cpuUsage();
  return {
    gateway: await input.gatewayCpuSeconds(),
    postgres: cpuSecondsOf({ name: 'postgres' }),
    worker: cpuSecondsOf({ pid: stack.workerPid }),
    temporal: cpuSecondsOf({ pid: stack.temporalPid }),
    bench: (own.user + own.system) / 1e6,
  };
}

/** Every run of `rollout:<id>` (more than one after continue-as-new) and their events. */
export async function workflowHistory(client: Client, rolloutId: string) {
  const workflowId = rolloutWorkflowId(rolloutId);
  const latest = await client.workflow.getHandle(workflowId).describe();
  const runs: Array<{ historyLength: number; status: string }> = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
    runs.push({ historyLength: run.historyLength, status: run.status.name });
  if (runs.length === 0) runs.push({ historyLength: latest.historyLength, status: latest.status.name }); // visibility lagging
  return {
    workflowId,
    events: runs.reduce((n, run) => n + run.historyLength, 0),
    runs: runs.map((run) => `${run.historyLength} ${run.status.toLowerCase()}`),
  };
}

/**
 * Per batch, from `rollout_agents`: when it was pushed, how long after the previous batch
 * settled (the workflow's own time between batches), and until its last agent reported.
 */
async function batchTimes(db: Knex, rolloutId: string): Promise<{ lines: string[]; databaseMs: number }> {
  const batches = await db('rollout_agents')
    .where({ rollout_id: rolloutId })
    .whereNotNull('batch')
    .groupBy('batch')
    .orderBy('batch')
    .select<Array<{ batch: number; n: number; pushed: Date | null; finished: Date | null }>>(
      'batch',
      db.raw('count(*)::int as n'),
      db.raw('min(pushed_at) as pushed'),
      db.raw('max(finished_at) as finished'),
    );
  const rollout = await db('rollouts')
    .where({ id: rolloutId })
    .first<{ started_at: Date; finished_at: Date | null }>('started_at', 'finished_at');
  const startedAt = rollout.started_at.getTime();
  let previous = startedAt;
  const lines = batches.map((b) => {
    const pushed = b.pushed?.getTime() ?? NaN;
    const finished = b.finished?.getTime() ?? NaN;
    const line = `  batch ${String(b.batch).padStart(2)}: ${String(b.n).padStart(5)} agents, pushed +${seconds(pushed - startedAt)} (${(pushed - previous).toFixed(0)} ms after the previous batch settled), all reported in ${seconds(finished - pushed)}`;
    previous = finished;
    return line;
  });
  return { lines, databaseMs: (rollout.finished_at?.getTime() ?? NaN) - startedAt };
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
