import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(() => env?.close());

const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  env.t.call(method, path, { token: env.operator, body, headers });

async function waitForState(id: string, state: string, timeoutMs = 20_000) {
  return eventually(async () => {
    const res = await call('GET', `/api/rollouts/${id}`);
    expect(res.body.state).toBe(state);
    return res;
  }, timeoutMs);
}

test('a rollout runs batch by batch to completed; every agent applies the version', async () => {
  const { groupId, fleet, ids } = await env.fleet(5);
  const [v1] = await publishConfiguration(env.t, env.operator, ['exporters:\n  debug: {}\n']);
  const created = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2 },
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ state: 'pending', progress: { total: 5, pending: 5, succeeded: 0 } });
  const etag = created.headers.get('etag')!;

  const started = await call('POST', `/api/rollouts/${created.body.id}/start`, undefined, { 'if-match': etag });
  expect(started.status).toBe(200);
  expect(started.body.state).toBe('running');
  expect(started.headers.get('etag')).not.toBe(etag);

  const done = await waitForState(created.body.id, 'completed');
  expect(done.body.progress).toEqual({ total: 5, pending: 0, applying: 0, succeeded: 5, failed: 0, skipped: 0 });
  expect(done.body.batches.map((b: { total: number }) => b.total)).toEqual([2, 2, 1]);
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  const agents = await call('GET', `/api/rollouts/${created.body.id}/agents`);
  expect(agents.body.items.map((a: { agentId: string }) => a.agentId)).toEqual(ids);

  const types = await env.t.database.db('events').where({ subject: created.body.id }).orderBy('seq').pluck('type');
  expect(types).toEqual(['rollout.created', 'rollout.started', 'rollout.progress', 'rollout.progress', 'rollout.progress', 'rollout.completed']);
}, 60_000);
