/**
 * A rollout operation waits on Temporal (the workflow accepts or refuses it) outside any
 * database transaction: twenty of them held in flight by a slowed worker take none of the
 * pool's ten connections, and the rest of the api goes on answering. An operation whose
 * run closes before it accepted it goes to the next run.
 */
import { NativeConnection, Worker, bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { createOutbound } from '../../platform/outbound';
import { WorkerPresence } from '../../platform/worker-presence';
import { createActivities } from '../../activities';
import { rolloutWorkflowId } from '../../workflows/definitions';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { testInfra } from '../support/infra-env';
import { startRolloutEnv, untilWorkflowIdle, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(() => env?.close());

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

/** A worker with the real activities, whose state transitions wait until `open()`. */
async function slowedWorker() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const activities = createActivities({
    db: env.t.database.db,
    settings: env.t.settings,
    outbound: createOutbound(env.t.settings.outbound),
  });
  const connection = await NativeConnection.connect({ address: testInfra().temporalAddress });
  const worker = await Worker.create({
    connection,
    taskQueue: env.taskQueue,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: require.resolve('../../workflows'),
      logger: new DefaultLogger('WARN'),
    }),
    activities: {
      ...activities,
      transitionRollout: async (...args: Parameters<typeof activities.transitionRollout>) => {
        await gate;
        return activities.transitionRollout(...args);
      },
    },
  });
  // Alive to the api as a worker process is (worker/run.ts does the same).
  const presence = await WorkerPresence.hold(env.t.settings.database.url, env.taskQueue);
  const running = worker.run();
  return {
    open,
    /** The worker process gone, as Postgres sees a killed one: its presence lock let go. */
    vanish: () => presence.release(),
    async stop() {
      worker.shutdown();
      await running;
      await presence.release();
      await connection.close();
    },
  };
}

/** A pending rollout to a new, empty group, its workflow loaded and idle: answers its id and workflow handle. */
async function idlePendingRollout(name: string) {
  const [v1] = await publishConfiguration(env.t, env.operator, [`${name}: 1\n`]);
  const groupId = (await call('POST', '/api/groups', { name: `${name}-${Date.now()}` })).body.id;
  const created = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1 },
  });
  const id = created.body.id as string;
  const handle = env.client.workflow.getHandle(rolloutWorkflowId(id));
  await untilWorkflowIdle(handle, 30_000);
  return { id, handle };
}

/** Once the rollout's workflow waits on the slowed worker's gated transition. */
function untilWaitingOnTransition(id: string): Promise<void> {
  return eventually(async () => {
    const description = await env.client.workflow.getHandle(rolloutWorkflowId(id)).describe();
    expect(description.raw.pendingActivities?.map((activity) => activity.activityType?.name)).toContain(
      'transitionRollout',
    );
  }, 30_000);
}

test('twenty rollout operations in flight against a slowed worker: other api calls, writes too, still answer', async () => {
  expect(env.t.settings.database.poolMax).toBe(10);
  const [v1] = await publishConfiguration(env.t, env.operator, ['in-flight: 1\n']);
  const rollouts: string[] = [];
  for (let i = 0; i < 20; i += 1) {
    const groupId = (await call('POST', '/api/groups', { name: `in-flight-${i}-${Date.now()}` })).body.id;
    const created = await call('POST', '/api/rollouts', {
      configurationId: v1!.configurationId,
      version: v1!.version,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 1 },
    });
    expect(created.status).toBe(201);
    rollouts.push(created.body.id);
  }

  // Each workflow has loaded its rollout and waits for `start` before the worker stops
  // (stopping abandons running activities, which then wait out their timeout).
  await eventually(async () => {
    for (const id of rollouts) {
      const history = await env.client.workflow.getHandle(rolloutWorkflowId(id)).fetchHistory();
      expect(history.events?.some((event) => event.activityTaskCompletedEventAttributes)).toBe(true);
    }
  }, 30_000);
  await env.stopWorker();
  const worker = await slowedWorker();
  try {
    let answered = 0;
    const starts = rollouts.map((id) =>
      call('POST', `/api/rollouts/${id}/start`).then((res) => {
        answered += 1;
        return res;
      }),
    );
    // Every start has reached its workflow, which is now waiting on the gated activity.
    for (const id of rollouts) await untilWaitingOnTransition(id);

    // No connection of the api's pool sits in a transaction while they wait.
    const waitingInTransaction = await env.t.database.db.raw(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
    );
    expect(waitingInTransaction.rows[0].n).toBe(0);

    // Reads and writes answer at once, more of them than the pool has connections.
    const others = await Promise.all([
      ...Array.from({ length: 12 }, () => call('GET', '/api/agents?limit=5')),
      ...Array.from({ length: 12 }, (_, i) => call('POST', '/api/groups', { name: `meanwhile-${i}-${Date.now()}` })),
      call('GET', `/api/rollouts/${rollouts[0]}`),
    ]);
    expect(others.map((res) => res.status)).toEqual([...Array(12).fill(200), ...Array(12).fill(201), 200]);
    expect(others.at(-1)!.body.state).toBe('pending');
    expect(answered).toBe(0);

    worker.open();
    const results = await Promise.all(starts);
    // Running, or already completed: the rollouts target empty groups.
    expect(results.map((res) => [res.status, res.body.state])).toEqual(
      rollouts.map(() => [200, expect.stringMatching(/^(running|completed)$/)]),
    );
  } finally {
    worker.open();
    await worker.stop();
    await env.startWorker();
  }
}, 90_000);

test('an operation sent as its run closes (before the run accepted it) is applied by the next run', async () => {
  // What a rollback met when it arrived as a completed rollout's run was ending: Temporal
  // aborts an update the closing run never accepted ("workflow update was aborted by
  // closing workflow"). Here the run is held between admitting the update and accepting it
  // (no worker) and then closed.
  const { id, handle } = await idlePendingRollout('closing');
  await env.stopWorker();
  // A worker process alive but not polling yet (as one starting up): the api sends the operation.
  const presence = await WorkerPresence.hold(env.t.settings.database.url, env.taskQueue);
  let started: ReturnType<typeof call>;
  try {
    started = call('POST', `/api/rollouts/${id}/start`);
    // The update is admitted: the run has a workflow task for it that no worker takes.
    await eventually(async () => expect((await handle.describe()).raw.pendingWorkflowTask).toBeTruthy(), 30_000);
    await handle.terminate('the run closes with an operation not yet accepted');
  } finally {
    await env.startWorker();
    await presence.release();
  }
  const answer = await started;
  expect([answer.status, answer.body.state]).toEqual([200, expect.stringMatching(/^(running|completed)$/)]);
}, 60_000);

test('the last worker gone while an operation waits on it: a 503 at once saying it may still be applied, not a wait for its deadline', async () => {
  const { id } = await idlePendingRollout('gone');
  await env.stopWorker();
  const worker = await slowedWorker();
  try {
    const started = call('POST', `/api/rollouts/${id}/start`);
    await untilWaitingOnTransition(id);
    await worker.vanish();
    const answer = await started;
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('30');
    expect(answer.body.detail).toBe(
      `The last worker for task queue ${env.taskQueue} stopped while the operation was on its way; it may still be applied when a worker is back. Retry once one is: if it was applied, the retry answers 409 with the state it is in.`,
    );
  } finally {
    worker.open();
    await worker.stop();
    await env.startWorker();
  }
}, 60_000);
