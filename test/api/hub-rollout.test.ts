/**
 * A rollout to simulated agents watched end to end through the hub, as an operator's screen
 * would: every batch's progress and the final state arrive, in order.
 */
import { LiveUpdatesClient } from '../../scripts/live-updates/client';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { startScript } from '../support/processes';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(async () => {
  await env?.close();
});

test('a rollout of three batches watched through the hub: started, each batch, completed, in order', async () => {
  const { groupId } = await env.fleet(3);
  const [version] = await publishConfiguration(env.t, env.operator, ['watched: true\n']);
  const created = await env.t.call('POST', '/api/rollouts', {
    token: env.operator,
    body: {
      configurationId: version!.configurationId,
      version: version!.version,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 1 },
    },
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;

  const watcher = await LiveUpdatesClient.connect(env.t.baseUrl, env.operator);
  try {
    await watcher.subscribe(['rollout.*'], { subject: id });
    expect((await env.t.call('POST', `/api/rollouts/${id}/start`, { token: env.operator })).status).toBe(200);
    await eventually(async () => expect(watcher.events.at(-1)?.type).toBe('rollout.completed'), 30_000);

    expect(watcher.events.map((event) => event.type)).toEqual([
      'rollout.started',
      'rollout.progress',
      'rollout.progress',
      'rollout.progress',
      'rollout.completed',
    ]);
    const batches = watcher.events.filter((event) => event.type === 'rollout.progress').map((event) => event.data);
    expect(batches.map((data) => data.batch)).toEqual([1, 2, 3]);
    expect(batches.map((data) => (data.progress as { succeeded: number }).succeeded)).toEqual([1, 2, 3]);
    expect(watcher.events.every((event) => event.subject === id)).toBe(true);
  } finally {
    await watcher.close();
  }
}, 60_000);

test("a rollout's agents' events carry the rollout: the hub's subscribe { rollout }, GET /api/events?rollout= and npm run watch --rollout follow them", async () => {
  const { groupId, ids } = await env.fleet(2);
  const [version] = await publishConfiguration(env.t, env.operator, ['watched: agents\n']);
  const created = await env.t.call('POST', '/api/rollouts', {
    token: env.operator,
    body: {
      name: 'watched agents',
      configurationId: version!.configurationId,
      version: version!.version,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 1 },
    },
  });
  const id = created.body.id as string;

  const watcher = await LiveUpdatesClient.connect(env.t.baseUrl, env.operator);
  const watch = startScript('scripts/watch.ts', ['--url', env.t.baseUrl, '--rollout', id], {
    FLEET_TOKEN: env.operator,
  });
  let stdout = '';
  let stderr = '';
  watch.stdout!.on('data', (chunk) => (stdout += chunk));
  watch.stderr!.on('data', (chunk) => (stderr += chunk));
  try {
    expect(await watcher.subscribe(['*'], { rollout: id })).toMatchObject({ type: 'subscribed', rollout: id });
    await eventually(async () => expect(stderr).toContain(`watching * in rollout ${id}`), 20_000);
    expect((await env.t.call('POST', `/api/rollouts/${id}/start`, { token: env.operator })).status).toBe(200);
    await eventually(async () => expect(watcher.events.at(-1)?.type).toBe('rollout.completed'), 30_000);

    // The agents' results come with the rollout's own events, the terminal event last.
    const updates = watcher.events.filter((event) => event.type === 'rollout.agent-updated');
    expect(updates.map((event) => event.subject).sort()).toEqual(ids);
    expect(watcher.events.every((event) => event.rollout === id)).toBe(true);
    const polled = await env.t.call('GET', `/api/events?rollout=${id}&limit=100`, { token: env.operator });
    // Its creation too (before the watcher subscribed), then what the watcher saw.
    const [creation, ...rest] = polled.body.items as Array<{ id: string; type: string; rollout: string }>;
    expect(creation).toMatchObject({ type: 'rollout.created', rollout: id });
    expect(rest.map((event) => event.id)).toEqual(watcher.events.map((event) => event.id));
    expect((await env.t.call('GET', '/api/events?rollout=nope', { token: env.operator })).status).toBe(400);

    // The watcher's line for an agent names the rollout, the batch, the direction and the state.
    await eventually(async () => expect(stdout).toContain('rollout.completed'));
    for (const agentId of ids)
      expect(stdout).toMatch(
        new RegExp(`rollout\\.agent-updated +${agentId}  rollout watched agents batch [12] forward: succeeded\\n`),
      );
  } finally {
    watch.kill();
    await watcher.close();
  }
}, 60_000);
