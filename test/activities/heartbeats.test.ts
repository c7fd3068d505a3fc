/**
 * A batch's push can wait a long time on the database (agent rows locked by reports, a
 * 100,000-agent batch): it heartbeats meanwhile, so Temporal neither times it out nor
 * starts a second attempt beside the first, which still holds its locks.
 */
import type { Knex } from 'knex';
import { rolloutWorkflowId } from '../../workflows/definitions';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(() => env?.close());

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

test('a push blocked past its heartbeat timeout (10 s) heartbeats, stays on its first attempt, then completes', async () => {
  const { groupId, fleet, ids } = await env.fleet(3);
  const [v1] = await publishConfiguration(env.t, env.operator, ['blocked: 1\n']);
  const created = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 3 },
  });
  expect(created.status).toBe(201);
  const rolloutId: string = created.body.id;

  // Another transaction holds the agents' rows: the push waits for it.
  const blocker: Knex.Transaction = await env.t.database.db.transaction();
  try {
    await blocker.raw('SELECT id FROM agents WHERE id = ANY(?::uuid[]) FOR UPDATE', [ids]);
    expect((await call('POST', `/api/rollouts/${rolloutId}/start`)).status).toBe(200);

    // Heartbeats reach the server (the SDK sends them at most every 8 s, 80 % of the
    // timeout); three distinct ones span more than the 10 s timeout.
    const handle = env.client.workflow.getHandle(rolloutWorkflowId(rolloutId));
    const beats = new Set<string>();
    await eventually(async () => {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      const push = pending.find((activity) => activity.activityType?.name === 'pushBatch');
      expect(push).toBeDefined();
      expect(push!.attempt).toBe(1);
      if (push!.lastHeartbeatTime)
        beats.add(`${String(push!.lastHeartbeatTime.seconds)}.${push!.lastHeartbeatTime.nanos}`);
      expect(beats.size).toBeGreaterThanOrEqual(3);
    }, 60_000);
  } finally {
    await blocker.commit();
  }

  await eventually(async () => {
    const res = await call('GET', `/api/rollouts/${rolloutId}`);
    expect(res.body).toMatchObject({ state: 'completed', progress: { total: 3, succeeded: 3, failed: 0 } });
  }, 30_000);
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
}, 120_000);
