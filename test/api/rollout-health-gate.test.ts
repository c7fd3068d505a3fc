/**
 * Health after the change (strategy `healthGate`), with real simulated agents reporting
 * OpAMP ComponentHealth: agents that apply a version cleanly and then turn unhealthy, or
 * whose connection keeps dropping, fail in their batch during its bake, and the rollout
 * pauses or rolls back on its own; healthy agents go through.
 */
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

async function agentsOf(rolloutId: string) {
  const res = await call('GET', `/api/rollouts/${rolloutId}/agents`);
  return new Map<string, { state: string; batch: number; error: string | null; rollback: { state: string } | null }>(
    res.body.items.map((item: { agentId: string }) => [item.agentId, item]),
  );
}

test('a batch whose agents apply cleanly and then turn unhealthy rolls the rollout back on its own; the next batch is never pushed', async () => {
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['gate: one\n', 'gate: two\n']);
  const { groupId, fleet, ids } = await env.fleet(4, {
    unhealthyAfterApply: { hash: v2!.contentHash, component: 'exporter/otlp', message: 'connection refused' },
  });
  const strategy = {
    batchSize: 2,
    bakeSeconds: 20,
    healthGate: { unhealthyAfterSeconds: 2 },
    onFailure: 'rollback',
  };

  // v1 leaves them healthy: the gate watches each batch's bake and lets it through.
  const first = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { ...strategy, bakeSeconds: 3 },
  });
  const completed = await waitForRollout(env, first, (body) => expect(body.state).toBe('completed'), 60_000);
  expect(completed.progress).toMatchObject({ succeeded: 4, failed: 0 });
  expect(completed.strategy.healthGate).toEqual({ unhealthyAfterSeconds: 2, maxDisconnects: 3 });

  // v2 applies cleanly, then the agents report their exporter failing.
  const second = await startRollout(env, {
    configurationId: v2!.configurationId,
    version: v2!.version,
    target: { groupIds: [groupId] },
    strategy,
  });
  const rolledBack = await waitForRollout(env, second, (body) => expect(body.state).toBe('rolled-back'), 60_000);
  expect(rolledBack.reason).toBe('2 of 2 agents of batch 1 failed (100.0% > maxFailurePercent 0)');
  await recordHistories(env.client, rolloutWorkflowId(second), 'health-gate-rollback');
  const agents = await agentsOf(second);
  const batch1 = [...agents.entries()].filter(([, agent]) => agent.batch === 1);
  expect(batch1).toHaveLength(2);
  for (const [agentId, agent] of batch1) {
    expect(agent.state).toBe('failed');
    expect(agent.error).toMatch(
      /^unhealthy for \d+ s after applying the version \(exporter\/otlp: connection refused\)$/,
    );
    expect(agent.rollback?.state).toBe('succeeded');
    // Each agent said APPLIED first: the gate's verdict is its own event, after the report's.
    const updates = await env.t.database
      .db('events')
      .where({ type: 'rollout.agent-updated', subject: agentId })
      .whereRaw("data->>'rolloutId' = ?", [second])
      .orderBy('seq')
      .pluck('data');
    expect(
      updates.map((data: { state: string; healthGate?: boolean; rollback?: boolean }) => [
        data.state,
        data.healthGate ? 'health gate' : data.rollback ? 'rollback' : 'report',
      ]),
    ).toEqual([
      ['succeeded', 'report'],
      ['failed', 'health gate'],
      ['succeeded', 'rollback'],
    ]);
  }
  // The agent's history keeps the verdict between its report and its rollback.
  const history = await call('GET', `/api/rollouts/${second}/agents/${batch1[0]![0]}/history`);
  expect(history.body.items.map((entry: { kind: string }) => entry.kind)).toEqual([
    'pushed',
    'applied',
    'unhealthy',
    'rollback-pushed',
    'rollback-applied',
  ]);
  expect(rolledBack.progress).toMatchObject({ failed: 2, skipped: 2 });
  // Batch 1 is back on v1 and healthy again, as the API shows; batch 2 never saw v2.
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  await eventually(async () => {
    for (const agentId of ids)
      expect((await call('GET', `/api/agents/${agentId}`)).body.health).toMatchObject({ healthy: true });
  });
}, 120_000);

test('an agent whose connection drops more than maxDisconnects times during the bake fails in its batch and pauses the rollout; a steady agent stays succeeded', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['flapping: after apply\n']);
  const { groupId, fleet } = await env.fleet(2);
  const id = await startRollout(env, {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2, bakeSeconds: 600, healthGate: { unhealthyAfterSeconds: 60, maxDisconnects: 1 } },
  });
  await waitForRollout(env, id, (body) => expect(body.progress.succeeded).toBe(2));
  const [flapping, steady] = fleet.agents;
  for (let drop = 0; drop < 2; drop++) {
    await flapping!.stop();
    await eventually(async () =>
      expect((await call('GET', `/api/agents/${flapping!.id}`)).body.status).toBe('offline'),
    );
    await flapping!.start();
    await flapping!.waitFor((state) => state.connected);
  }
  const paused = await waitForRollout(env, id, (body) => expect(body.state).toBe('paused'));
  expect(paused.reason).toBe('1 of 2 agents of batch 1 failed (50.0% > maxFailurePercent 0)');
  const agents = await agentsOf(id);
  expect(agents.get(flapping!.id)).toMatchObject({
    state: 'failed',
    error: "the agent's connection dropped 2 times after it applied the version",
  });
  expect(agents.get(steady!.id)).toMatchObject({ state: 'succeeded', error: null });
  expect((await call('POST', `/api/rollouts/${id}/abort`)).status).toBe(200);
}, 120_000);

test('a health gate that could never judge within the bake is refused', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['refused: gate\n']);
  const { groupId } = await env.fleet(1);
  const res = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1, bakeSeconds: 10, healthGate: { unhealthyAfterSeconds: 30 } },
  });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({
    status: 400,
    errors: [
      {
        path: 'body.strategy.healthGate.unhealthyAfterSeconds',
        message: 'must not exceed bakeSeconds: the gate watches agents only while their batch bakes',
      },
    ],
  });
  for (const healthGate of [
    {},
    { unhealthyAfterSeconds: 0 },
    { unhealthyAfterSeconds: 5, extra: 1 },
    { unhealthyAfterSeconds: 5, maxDisconnects: -1 },
  ]) {
    const bad = await call('POST', '/api/rollouts', {
      configurationId: v1!.configurationId,
      version: v1!.version,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 1, bakeSeconds: 10, healthGate },
    });
    expect(bad.status).toBe(400);
  }
});
