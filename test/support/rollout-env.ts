/**
 * Everything a rollout test needs, real: the api (with a Temporal client), the agent
 * gateway over TLS, a worker on the suite's Temporal dev server (own task queue), and
 * simulated agents enrolled in a group of their own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Outbound } from '../../platform/outbound';
import { NORMAL_QUEUE, WORKFLOW_TASKS } from '../../platform/temporal';
import { startWorker, type WorkerHandle } from '../../worker/run';
import { fleetCensusWorkflowId, outboxRetentionWorkflowId, peerHealthWorkflowId } from '../../workflows/definitions';
import { issueBootstrapToken, startTestGateway, type TestGateway } from './agent-gateway';
import { startTestApp, testSettings, type TestApp } from './app';
import { eventually } from './eventually';
import { testInfra } from './infra-env';
import { runFleet, type Fleet, type FleetOptions } from '../../scripts/agents/fleet';

export interface RolloutEnv {
  t: TestApp;
  gateway: TestGateway;
  client: Client;
  taskQueue: string;
  operator: string;
  /** Starts the worker (again, after stopWorker). */
  startWorker(): Promise<void>;
  /** Stops the worker at once, as a crash would look to Temporal (running activities are abandoned). */
  stopWorker(): Promise<void>;
  /** `count` simulated agents enrolled in a new group, or in `groupId` (WebSocket, TLS, no CSR). */
  fleet(
    count: number,
    options?: Partial<FleetOptions> & { groupId?: string },
  ): Promise<{ groupId: string; fleet: Fleet; ids: string[] }>;
  /** Settings for a worker process of this environment (worker/main.ts). */
  workerEnv(): Record<string, string>;
  close(): Promise<void>;
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

export interface RolloutEnvOptions {
  /** A Temporal server of the test's own (e.g. the time-skipping test server); the suite's dev server by default. */
  temporalAddress?: string;
  /** Receives what the worker's activities log (e.g. to prove a secret never shows in a line). */
  workerLogger?: Logger;
  /** The worker's outbound policy (e.g. one whose resolver maps test names), instead of its settings'. */
  workerOutbound?: Outbound;
  /** The api's outbound policy, likewise. */
  apiOutbound?: Outbound;
  /** Settings of the worker beyond the api's (e.g. Git__WorkDir). */
  workerEnv?: Record<string, string>;
  /** Settings of the api beyond the test defaults (e.g. Http__TrustProxy). */
  apiEnv?: Record<string, string>;
  /** The agent listener's port (default: any free one). */
  gatewayPort?: number;
}

export async function startRolloutEnv(options: RolloutEnvOptions = {}): Promise<RolloutEnv> {
  const temporalAddress = options.temporalAddress ?? testInfra().temporalAddress;
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN') });
  bundle ??= bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: new DefaultLogger('WARN'),
  });
  const taskQueue = `rollouts-${randomBytes(4).toString('hex')}`;
  const connection = await Connection.connect({ address: temporalAddress });
  const client = new Client({ connection });
  const t = await startTestApp(
    { Temporal__TaskQueue: taskQueue, Temporal__Address: temporalAddress, ...options.apiEnv },
    { temporal: client, outbound: options.apiOutbound },
  );
  const gateway = await startTestGateway(t, { port: options.gatewayPort });
  const operator = await t.token('default.operator');
  // The api's encryption key: the worker opens what the api sealed (Git credentials).
  const workerSettings = testSettings(t.database.url, {
    Temporal__TaskQueue: taskQueue,
    Temporal__Address: temporalAddress,
    Secrets__EncryptionKey: t.settings.encryptionKey!.toString('base64'),
    ...options.apiEnv,
    ...options.workerEnv,
  });
  let worker: WorkerHandle | undefined;
  const fleets: Fleet[] = [];

  const env: RolloutEnv = {
    t,
    gateway,
    client,
    taskQueue,
    operator,
    async startWorker() {
      worker = await startWorker(workerSettings, t.database.db, {
        bundle: await bundle!,
        logger: options.workerLogger,
        outbound: options.workerOutbound,
      });
    },
    async stopWorker() {
      const stopping = worker;
      worker = undefined;
      if (!stopping) return;
      stopping.worker.shutdown();
      await stopping.running;
      await stopping.connection.close();
    },
    async fleet(count, { groupId: existing, ...options } = {}) {
      const groupId =
        existing ??
        (await t.call('POST', '/api/groups', { token: operator, body: { name: `g-${randomUUID().slice(0, 8)}` } })).body
          .id;
      const token = await issueBootstrapToken(t, operator, { groupId, maxUses: count });
      const fleet = await runFleet({
        count,
        endpoint: gateway.wsUrl,
        token: token.token,
        ca: gateway.ca.certificatePem,
        csr: false,
        ...options,
      });
      fleets.push(fleet);
      await fleet.waitForAll((state) => state.enrolled && state.connected, 15_000);
      return { groupId, fleet, ids: fleet.agents.map((agent) => agent.id).sort() };
    },
    workerEnv: () => ({
      Environment: 'Production',
      Database__Url: t.database.url,
      Temporal__Address: temporalAddress,
      Temporal__TaskQueue: taskQueue,
      Secrets__EncryptionKey: t.settings.encryptionKey!.toString('base64'),
      Logging__Level: 'warn',
    }),
    async close() {
      await Promise.all(fleets.map((fleet) => fleet.stop().catch(() => {})));
      await env.stopWorker();
      const singletons = [outboxRetentionWorkflowId, peerHealthWorkflowId, fleetCensusWorkflowId];
      for (const singleton of singletons.map((id) => id(taskQueue))) {
        await client.workflow
          .getHandle(singleton)
          .terminate('test done')
          .catch(() => {});
      }
      await gateway.close();
      await t.close();
      await connection.close();
    },
  };
  await env.startWorker();
  return env;
}

/** Waits until a workflow has loaded what it runs on (an activity completed) and is idle, its last task done. */
export async function untilWorkflowIdle(handle: WorkflowHandle, timeoutMs = 20_000): Promise<void> {
  await eventually(async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.some((event) => event.activityTaskCompletedEventAttributes)).toBe(true);
    expect(events.at(-1)?.workflowTaskCompletedEventAttributes).toBeTruthy();
  }, timeoutMs);
}

/**
 * Once the worker process `pid` polls the environment's task queue for workflow tasks (its
 * default identity is `<pid>@<host>`): a process just spawned takes seconds to bundle its
 * workflows, and an operation sent before then waits for it.
 */
export async function untilWorkerPolls(env: RolloutEnv, pid: number, timeoutMs = 30_000): Promise<void> {
  await eventually(async () => {
    const { pollers } = await env.client.workflowService.describeTaskQueue({
      namespace: env.client.options.namespace,
      taskQueue: { name: env.taskQueue, kind: NORMAL_QUEUE },
      taskQueueType: WORKFLOW_TASKS,
    });
    expect((pollers ?? []).map((poller) => poller.identity?.split('@')[0])).toContain(String(pid));
  }, timeoutMs);
}

/** The rollout as `GET /api/rollouts/{id}` shows it once `check` passes on it (read again until then). */
export function waitForRollout(
  env: RolloutEnv,
  id: string,
  check: (body: Record<string, any>) => void,
  timeoutMs = 30_000,
): Promise<Record<string, any>> {
  return eventually(async () => {
    const res = await env.t.call('GET', `/api/rollouts/${id}`, { token: env.operator });
    check(res.body);
    return res.body as Record<string, any>;
  }, timeoutMs);
}

/** Creates a rollout as the environment's operator and starts it; answers its id. */
export async function startRollout(env: RolloutEnv, body: Record<string, unknown>): Promise<string> {
  const created = await env.t.call('POST', '/api/rollouts', { token: env.operator, body });
  expect(created.status).toBe(201);
  const started = await env.t.call('POST', `/api/rollouts/${created.body.id}/start`, { token: env.operator });
  expect(started.status).toBe(200);
  return created.body.id as string;
}
