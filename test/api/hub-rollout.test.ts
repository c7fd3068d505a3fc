/**
 * A rollout to simulated agents watched end to end through the hub, as an operator's screen
 * would: every batch's progress and the final state arrive, in order.
 */
import { LiveUpdatesClient } from '../../scripts/live-updates/client';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
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
