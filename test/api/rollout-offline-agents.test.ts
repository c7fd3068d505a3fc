/**
 * Agents offline when their batch is pushed (a laptop closed, a host rebooting), with real
 * simulated agents that disconnect and come back: by default they are deferred (neither
 * failed nor blocking), get the version when they connect and settle then, with their event;
 * a strategy may skip or fail them instead; a completed rollout keeps delivering for its
 * late-arrival window; failing, aborting or rolling back stops delivering to them.
 */
import { OFFLINE_SKIPPED } from '../../db/repos/rollout-agents';
import { NEVER_CAME_ONLINE, ROLLBACK_OF_DEFERRED } from '../../domain/rollouts';
import type { Fleet } from '../../scripts/agents/fleet';
import { rolloutWorkflowId } from '../../workflows/definitions';
import { publishConfiguration } from '../support/configurations';
import { recordHistories } from '../support/histories';
import { eventually } from '../support/eventually';
import { startRollout, startRolloutEnv, waitForRollout, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(() => env?.close());

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

/** Five connected agents, two of them then closed (the service sees them offline). */
async function fleetWithTwoOffline(): Promise<{ groupId: string; fleet: Fleet; online: string[]; offline: string[] }> {
  const { groupId, fleet } = await env.fleet(5);
  const closing = fleet.agents.slice(0, 2);
  await Promise.all(closing.map((agent) => agent.stop()));
  const offline = closing.map((agent) => agent.id).sort();
  await eventually(async () => {
    for (const id of offline) expect((await call('GET', `/api/agents/${id}`)).body.status).toBe('offline');
  });
  const online = fleet.agents
    .slice(2)
    .map((agent) => agent.id)
    .sort();
  return { groupId, fleet, online, offline };
}

async function agentsOf(rolloutId: string) {
  const res = await call('GET', `/api/rollouts/${rolloutId}/agents`);
  return new Map<string, { state: string; error: string | null; rollback: unknown }>(
    res.body.items.map((item: { agentId: string }) => [item.agentId, item]),
  );
}

const agentUpdates = (rolloutId: string, agentId: string) =>
  env.t.database
    .db('events')
    .where({ type: 'rollout.agent-updated', subject: agentId })
    .whereRaw("data->>'rolloutId' = ?", [rolloutId])
    .orderBy('seq')
    .pluck('data');

test('deferred by default: the rollout completes on its online agents (maxFailurePercent 0 unmoved), and each late arrival gets the version and settles with its event', async () => {
  const { groupId, fleet, offline } = await fleetWithTwoOffline();
  const [v1] = await publishConfiguration(env.t, env.operator, ['late: arrivals\n']);
  const id = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2 },
  });
  const done = await waitForRollout(env, id, (body) => expect(body.state).toBe('completed'));
  expect(done.progress).toEqual({
    total: 5,
    pending: 0,
    applying: 0,
    deferred: 2,
    succeeded: 3,
    failed: 0,
    skipped: 0,
  });
  expect(done.strategy).toMatchObject({ offlineAgents: 'defer', lateArrivalSeconds: 7 * 86_400 });
  for (const agentId of offline) {
    expect((await agentsOf(id)).get(agentId)).toMatchObject({ state: 'deferred', error: null });
    expect(await agentUpdates(id, agentId)).toEqual([
      expect.objectContaining({ state: 'deferred', batch: expect.any(Number) }),
    ]);
  }

  // The laptops open again: each gets the version on connecting, applies it, and settles.
  await Promise.all(fleet.agents.slice(0, 2).map((agent) => agent.start()));
  const settled = await waitForRollout(env, id, (body) =>
    expect(body.progress).toMatchObject({ deferred: 0, succeeded: 5 }),
  );
  expect(settled.state).toBe('completed');
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  for (const agentId of offline) {
    expect((await agentsOf(id)).get(agentId)).toMatchObject({ state: 'succeeded' });
    expect((await agentUpdates(id, agentId)).map((data: { state: string }) => data.state)).toEqual([
      'deferred',
      'succeeded',
    ]);
  }
  // Nobody is left to wait for: the workflow ends, and its result counts every agent.
  const result = await env.client.workflow.getHandle(`rollout:${id}`).result();
  expect(result).toMatchObject({ state: 'completed', outcome: 'completed: 5 succeeded of 5 agents' });
}, 120_000);

test('offlineAgents skip settles them skipped at once, and they never get the version', async () => {
  const { groupId, fleet, offline } = await fleetWithTwoOffline();
  const [v1] = await publishConfiguration(env.t, env.operator, ['skip: offline\n']);
  const id = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 100, offlineAgents: 'skip' },
  });
  const done = await waitForRollout(env, id, (body) => expect(body.state).toBe('completed'));
  expect(done.progress).toMatchObject({ deferred: 0, succeeded: 3, skipped: 2 });
  for (const agentId of offline)
    expect((await agentsOf(id)).get(agentId)).toMatchObject({ state: 'skipped', error: OFFLINE_SKIPPED });
  const back = fleet.agents[0]!;
  await back.start();
  await back.waitFor((state) => state.connected);
  expect(back.state.lastConfigHash).not.toBe(v1!.contentHash);
}, 120_000);

test('offlineAgents fail keeps the old behaviour: silent past the apply timeout, they fail the batch', async () => {
  const { groupId, offline } = await fleetWithTwoOffline();
  const [v1] = await publishConfiguration(env.t, env.operator, ['fail: offline\n']);
  const id = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 100, offlineAgents: 'fail', applyTimeoutSeconds: 1 },
  });
  const paused = await waitForRollout(env, id, (body) => expect(body.state).toBe('paused'));
  expect(paused.progress).toMatchObject({ failed: 2, succeeded: 3, deferred: 0 });
  expect(paused.reason).toMatch(/^2 of 5 agents of batch 1 failed/);
  for (const agentId of offline)
    expect((await agentsOf(id)).get(agentId)).toMatchObject({
      state: 'failed',
      error: expect.stringMatching(/^no APPLIED/),
    });
}, 120_000);

test('a late-arrival window of 0: completed deferred agents are skipped at once and no longer get the version', async () => {
  const { groupId, fleet, offline } = await fleetWithTwoOffline();
  const [v1] = await publishConfiguration(env.t, env.operator, ['window: 0\n']);
  const id = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 100, lateArrivalSeconds: 0 },
  });
  const done = await waitForRollout(env, id, (body) =>
    expect(body).toMatchObject({ state: 'completed', progress: { deferred: 0, skipped: 2, succeeded: 3 } }),
  );
  expect(done.progress.total).toBe(5);
  for (const agentId of offline)
    expect((await agentsOf(id)).get(agentId)).toMatchObject({ state: 'skipped', error: NEVER_CAME_ONLINE.late });
  const back = fleet.agents[0]!;
  await back.start();
  await back.waitFor((state) => state.connected);
  expect(back.state.lastConfigHash).not.toBe(v1!.contentHash);
  expect((await call('GET', `/api/agents/${back.id}`)).body.desired).toBeNull();
}, 120_000);

test('rolling back a completed rollout covers its deferred agents: they never get the version, and the rollback says so', async () => {
  const { groupId, fleet, offline, online } = await fleetWithTwoOffline();
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['before: 1\n', 'after: 2\n']);
  // Everyone runs v1 first (the two offline ones too: they ran it before closing).
  await Promise.all(fleet.agents.slice(0, 2).map((agent) => agent.start()));
  const first = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 100 },
  });
  await waitForRollout(env, first, (body) =>
    expect(body).toMatchObject({ state: 'completed', progress: { succeeded: 5 } }),
  );
  await Promise.all(fleet.agents.slice(0, 2).map((agent) => agent.stop()));
  await eventually(async () => {
    for (const agentId of offline) expect((await call('GET', `/api/agents/${agentId}`)).body.status).toBe('offline');
  });

  const id = await startRollout(env, {
    configurationId: v2!.configurationId,
    version: v2!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 100 },
  });
  await waitForRollout(env, id, (body) =>
    expect(body).toMatchObject({ state: 'completed', progress: { deferred: 2, succeeded: 3 } }),
  );
  expect((await call('POST', `/api/rollouts/${id}/rollback`)).status).toBe(200);
  const rolledBack = await waitForRollout(env, id, (body) => expect(body.state).toBe('rolled-back'));
  expect(rolledBack.rollback).toMatchObject({ succeeded: 3, skipped: 2 });
  const agents = await agentsOf(id);
  for (const agentId of offline)
    expect(agents.get(agentId)).toMatchObject({
      state: 'skipped',
      error: NEVER_CAME_ONLINE['rolling-back'],
      rollback: { state: 'skipped', error: ROLLBACK_OF_DEFERRED },
    });
  for (const agentId of online) expect(agents.get(agentId)).toMatchObject({ rollback: { state: 'succeeded' } });
  // Back online, they keep v1: the version they ran before, desired again.
  await Promise.all(fleet.agents.slice(0, 2).map((agent) => agent.start()));
  for (const agent of fleet.agents) await agent.waitFor((state) => state.lastConfigHash === v1!.contentHash);
  for (const agentId of offline)
    expect((await call('GET', `/api/agents/${agentId}`)).body.desired).toMatchObject({ version: v1!.version });
}, 180_000);

test('a paused rollout settles its deferred agents as they come back (a window of 0 does not skip them while paused); the resume goes on', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['paused: late arrivals\n']);
  const { groupId, fleet } = await env.fleet(4, {
    apply: (agent) => (agent === fleet.agents[2] ? 'exporter otlp: connection refused' : undefined),
  });
  const laptops = fleet.agents.slice(0, 2);
  await Promise.all(laptops.map((agent) => agent.stop()));
  await eventually(async () => {
    for (const agent of laptops) expect((await call('GET', `/api/agents/${agent.id}`)).body.status).toBe('offline');
  });
  const id = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 4, lateArrivalSeconds: 0 },
  });
  // One of the two that answered failed: paused, with the laptops deferred.
  const paused = await waitForRollout(env, id, (body) => expect(body.state).toBe('paused'));
  expect(paused.progress).toMatchObject({ deferred: 2, failed: 1, succeeded: 1 });

  await Promise.all(laptops.map((agent) => agent.start()));
  const settled = await waitForRollout(env, id, (body) =>
    expect(body.progress).toMatchObject({ deferred: 0, succeeded: 3 }),
  );
  expect(settled.state).toBe('paused');
  for (const agent of laptops) {
    expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
    expect((await agentUpdates(id, agent.id)).map((data: { state: string }) => data.state)).toEqual([
      'deferred',
      'succeeded',
    ]);
  }
  // Nothing is left to push: the resume answers the rollout running, or (a busy machine's
  // answer, read after the workflow went on) already completed.
  expect(['running', 'completed']).toContain((await call('POST', `/api/rollouts/${id}/resume`)).body.state);
  await waitForRollout(env, id, (body) => expect(body.state).toBe('completed'));
  await recordHistories(env.client, rolloutWorkflowId(id), 'paused-settles-deferred');
}, 120_000);
