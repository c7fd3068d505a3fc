/**
 * The rollout workflow on Temporal's time-skipping test server: bakes of an hour pass in
 * skipped time, operations arrive while the workflow sleeps, and a small history limit
 * forces continue-as-new early. Everything else is real: the api, the worker with its
 * activities on Postgres, simulated agents over the gateway.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { rolloutWorkflowId, rolloutWorkflowType, type RolloutWorkflow } from '../../workflows/definitions';
import { publishConfiguration } from '../support/configurations';
import { recordHistories } from '../support/histories';
import { eventually } from '../support/eventually';
import { startRolloutEnv, untilWorkflowIdle, type RolloutEnv } from '../support/rollout-env';
import { startTimeSkippingTemporal } from '../support/time-skipping';

let temporal: TestWorkflowEnvironment;
let env: RolloutEnv;
beforeAll(async () => {
  temporal = await startTimeSkippingTemporal();
  // Skipped time fires every timer on the server, and each runs for real while the test
  // waits: a day of peer checks every minute would be 1,440 sweeps (one check a day keeps
  // the skip cheap), and the fleet census counts once a minute whatever we set, so the
  // tests skip hours, not days (a day of counts took 30-60 s on a busy machine).
  env = await startRolloutEnv({
    temporalAddress: temporal.address,
    workerEnv: { Federation__HealthCheckSeconds: '86400' },
  });
}, 90_000);
afterAll(async () => {
  await env?.close();
  await temporal?.teardown();
});

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

async function rolloutOf(agents: number, strategy: Record<string, unknown>) {
  const { groupId, fleet } = await env.fleet(agents);
  const [v1] = await publishConfiguration(env.t, env.operator, [`skipped: ${agents}\n`]);
  const created = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy,
  });
  expect(created.status).toBe(201);
  return { id: created.body.id as string, fleet, version: v1! };
}

const rollout = async (id: string) => (await call('GET', `/api/rollouts/${id}`)).body;

test('an hour of bake between batches passes in skipped time; the rollout completes', async () => {
  const { id, fleet, version } = await rolloutOf(2, { batchSize: 1, bakeSeconds: 3600 });
  expect((await call('POST', `/api/rollouts/${id}/start`)).status).toBe(200);
  await eventually(async () => expect((await rollout(id)).progress.succeeded).toBe(1), 20_000);
  // Baking: the second batch waits for the hour, however long we look.
  expect((await rollout(id)).batches).toHaveLength(1);

  await temporal.sleep('1 hour');
  await eventually(
    async () => expect(await rollout(id)).toMatchObject({ state: 'running', progress: { succeeded: 2 } }),
    20_000,
  );
  // The last batch bakes too before the rollout is called completed.
  await temporal.sleep('1 hour');
  await eventually(async () => expect((await rollout(id)).state).toBe('completed'), 20_000);
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(version.contentHash);
  await recordHistories(env.client, rolloutWorkflowId(id), 'bake-then-complete');
}, 60_000);

test('paused during a bake, hours pass with nothing pushed; resumed, the next batch goes out at once', async () => {
  const { id, fleet, version } = await rolloutOf(2, { batchSize: 1, bakeSeconds: 3600 });
  expect((await call('POST', `/api/rollouts/${id}/start`)).status).toBe(200);
  await eventually(async () => expect((await rollout(id)).progress.succeeded).toBe(1), 20_000);

  expect((await call('POST', `/api/rollouts/${id}/pause`)).body).toMatchObject({ state: 'paused' });
  await temporal.sleep('3 hours');
  expect(await rollout(id)).toMatchObject({ state: 'paused', progress: { succeeded: 1, pending: 1 } });
  expect(fleet.agents.filter((agent) => agent.state.lastConfigHash === version.contentHash)).toHaveLength(1);

  // The bake ran out while paused: resuming pushes the second batch without another hour.
  expect((await call('POST', `/api/rollouts/${id}/resume`)).body).toMatchObject({ state: 'running' });
  await eventually(async () => expect((await rollout(id)).progress.succeeded).toBe(2), 20_000);
  await temporal.sleep('1 hour');
  await eventually(async () => expect((await rollout(id)).state).toBe('completed'), 20_000);
  await recordHistories(env.client, rolloutWorkflowId(id), 'pause-during-bake-then-resume');
}, 60_000);

test('completed, then rolled back: every agent gets its previous version back', async () => {
  const { groupId, fleet } = await env.fleet(2);
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['level: info\n', 'level: debug\n']);
  const ids: string[] = [];
  for (const version of [v1!, v2!]) {
    const created = await call('POST', '/api/rollouts', {
      configurationId: version.configurationId,
      version: version.version,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 2, bakeSeconds: 0 },
    });
    ids.push(created.body.id as string);
    expect((await call('POST', `/api/rollouts/${created.body.id}/start`)).status).toBe(200);
    await eventually(async () => expect((await rollout(created.body.id)).state).toBe('completed'), 20_000);
  }
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v2!.contentHash);

  const id = ids[1]!;
  expect((await call('POST', `/api/rollouts/${id}/rollback`)).body).toMatchObject({ state: 'rolling-back' });
  await eventually(async () => expect((await rollout(id)).state).toBe('rolled-back'), 20_000);
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  await recordHistories(env.client, rolloutWorkflowId(id), 'complete-then-rollback');
}, 60_000);

test('aborted while baking: no further batch, the workflow ends', async () => {
  const { id, fleet, version } = await rolloutOf(3, { batchSize: 1, bakeSeconds: 3600 });
  expect((await call('POST', `/api/rollouts/${id}/start`)).status).toBe(200);
  await eventually(async () => expect((await rollout(id)).progress.succeeded).toBe(1), 20_000);
  expect((await call('POST', `/api/rollouts/${id}/abort`)).body).toMatchObject({ state: 'aborted' });
  await env.client.workflow.getHandle(rolloutWorkflowId(id)).result();
  await temporal.sleep('3 hours');
  expect(await rollout(id)).toMatchObject({ state: 'aborted', progress: { succeeded: 1, pending: 0, skipped: 2 } });
  expect(fleet.agents.filter((agent) => agent.state.lastConfigHash === version.contentHash)).toHaveLength(1);
  await recordHistories(env.client, rolloutWorkflowId(id), 'abort-while-baking');
}, 60_000);
test('a small history limit makes the workflow continue as new between batches; the rollout completes all the same', async () => {
  const { id, fleet, version } = await rolloutOf(6, { batchSize: 1, bakeSeconds: 60 });
  // The api started the workflow with the production limit (1,000 events); start it again
  // as a test would, with a limit of 40 events (a batch costs about 19). The first run is
  // ended once it is idle (rollout loaded, waiting for the start): the test server's clock
  // stays locked by a run terminated with a task in flight (temporalio/sdk-java#3088).
  const handle = env.client.workflow.getHandle(rolloutWorkflowId(id));
  await untilWorkflowIdle(handle, 20_000);
  await handle.terminate('restarted by the test with a small history limit');
  await env.client.workflow.start<RolloutWorkflow>(rolloutWorkflowType, {
    workflowId: rolloutWorkflowId(id),
    taskQueue: env.taskQueue,
    args: [{ rolloutId: id, tenantId: 'default', historyLimit: 40 }],
  });
  expect((await call('POST', `/api/rollouts/${id}/start`)).status).toBe(200);

  for (let batch = 1; batch <= 6; batch += 1) {
    await eventually(async () => expect((await rollout(id)).progress.succeeded).toBe(batch), 20_000);
    await temporal.sleep('1 minute');
  }
  await eventually(async () => expect((await rollout(id)).state).toBe('completed'), 20_000);
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(version.contentHash);
  // The row reads completed one step before the workflow returns: its last run must have ended.
  await env.client.workflow.getHandle(rolloutWorkflowId(id)).result();

  // Several runs, each but the last ended by continue-as-new, none longer than the limit allows.
  const runs: Array<{ events: number; last: string }> = [];
  const latest = await env.client.workflow.getHandle(rolloutWorkflowId(id)).describe();
  let runId: string | undefined = latest.runId;
  while (runId) {
    const history: Awaited<ReturnType<ReturnType<typeof env.client.workflow.getHandle>['fetchHistory']>> =
      await env.client.workflow.getHandle(rolloutWorkflowId(id), runId).fetchHistory();
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    const last = events.at(-1)!;
    runs.unshift({
      events: events.length,
      last: last.workflowExecutionContinuedAsNewEventAttributes
        ? 'continued-as-new'
        : last.workflowExecutionCompletedEventAttributes
          ? 'completed'
          : 'other',
    });
    runId = started?.continuedExecutionRunId || undefined;
  }
  expect(runs.length).toBeGreaterThanOrEqual(3);
  expect(runs.slice(0, -1).every((run) => run.last === 'continued-as-new')).toBe(true);
  expect(runs.at(-1)!.last).toBe('completed');
  expect(Math.max(...runs.map((run) => run.events))).toBeLessThan(40 + 30);
  await recordHistories(env.client, rolloutWorkflowId(id), 'continue-as-new');
}, 120_000);
