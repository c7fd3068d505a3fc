import { rolloutStatusQuery } from '../../workflows/definitions';
import { publishConfiguration } from '../support/configurations';
import { seedAgents } from '../support/agents-seed';
import { eventually } from '../support/eventually';
import { PRESENCE_SETTLE_MS, workerPresent } from '../../platform/worker-presence';
import { startScript } from '../support/processes';
import { startRolloutEnv, untilWorkerPolls, type RolloutEnv } from '../support/rollout-env';
import { expectRolloutCreatedAsShown } from '../support/events';

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
  await expectRolloutCreatedAsShown(env.t.database.db, created.body.id, done.body);
  expect(done.body.progress).toEqual({
    total: 5,
    pending: 0,
    applying: 0,
    deferred: 0,
    succeeded: 5,
    failed: 0,
    skipped: 0,
  });
  expect(done.body.batches.map((b: { total: number }) => b.total)).toEqual([2, 2, 1]);
  // The search for a fourth batch finds no agent left: that is no batch.
  expect(done.body.currentBatch).toBe(3);
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  const agents = await call('GET', `/api/rollouts/${created.body.id}/agents`);
  expect(agents.body.items.map((a: { agentId: string }) => a.agentId)).toEqual(ids);
  // Each with its name, as GET /api/agents/{id} shows it.
  for (const item of agents.body.items)
    expect(item.agentName).toBe((await call('GET', `/api/agents/${item.agentId}`)).body.name);

  const types = await env.t.database.db('events').where({ subject: created.body.id }).orderBy('seq').pluck('type');
  expect(types).toEqual([
    'rollout.created',
    'rollout.started',
    'rollout.progress',
    'rollout.progress',
    'rollout.progress',
    'rollout.completed',
  ]);
}, 60_000);

async function createRollout(body: Record<string, unknown>) {
  const res = await call('POST', '/api/rollouts', body);
  expect(res.status).toBe(201);
  return res.body as { id: string; state: string };
}

const eventTypes = (rolloutId: string) =>
  env.t.database.db('events').where({ subject: rolloutId }).orderBy('seq').pluck('type');

test('pause between batches, then resume; 409 on resume of a running rollout; 412 on a stale ETag', async () => {
  const { groupId, fleet } = await env.fleet(4);
  const [v1] = await publishConfiguration(env.t, env.operator, ['a: 1\n']);
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1, bakeSeconds: 4 },
  });
  const started = await call('POST', `/api/rollouts/${rollout.id}/start`);
  expect(started.status).toBe(200);

  const stale = started.headers.get('etag')!;
  const running = await call('POST', `/api/rollouts/${rollout.id}/resume`);
  expect(running.status).toBe(409);
  expect(running.body.type).toMatch(/invalid-state-transition$/);

  // The first batch applies, then the rollout bakes for 4 s: pause it there.
  await eventually(
    async () => expect((await call('GET', `/api/rollouts/${rollout.id}`)).body.progress.succeeded).toBe(1),
    15_000,
  );
  const current = await call('GET', `/api/rollouts/${rollout.id}`);
  const paused = await call('POST', `/api/rollouts/${rollout.id}/pause`, undefined, {
    'if-match': current.headers.get('etag')!,
  });
  expect(paused.status).toBe(200);
  expect(paused.body.state).toBe('paused');

  const staleResume = await call('POST', `/api/rollouts/${rollout.id}/resume`, undefined, { 'if-match': stale });
  expect(staleResume.status).toBe(412);
  expect((await call('GET', `/api/rollouts/${rollout.id}`)).body.state).toBe('paused');

  // Paused: no further batch is pushed, also once the bake is over.
  await new Promise((resolve) => setTimeout(resolve, 5000));
  expect(fleet.agents.filter((a) => a.state.lastConfigHash === v1!.contentHash)).toHaveLength(1);

  const resumed = await call('POST', `/api/rollouts/${rollout.id}/resume`, undefined, {
    'if-match': paused.headers.get('etag')!,
  });
  expect(resumed.status).toBe(200);
  expect(resumed.body.state).toBe('running');
  // What was left of the bake ran out while paused: batch 2 follows.
  await eventually(
    async () => expect((await call('GET', `/api/rollouts/${rollout.id}`)).body.progress.succeeded).toBe(2),
    15_000,
  );
  const aborted = await call('POST', `/api/rollouts/${rollout.id}/abort`);
  expect(aborted.status).toBe(200);
  expect(aborted.body).toMatchObject({ state: 'aborted', reason: expect.stringContaining('aborted by') });
  // The two agents never pushed are settled, not left pending for ever.
  expect(aborted.body.progress).toEqual({
    total: 4,
    pending: 0,
    applying: 0,
    deferred: 0,
    succeeded: 2,
    failed: 0,
    skipped: 2,
  });
  const skipped = await call('GET', `/api/rollouts/${rollout.id}/agents?state=skipped`);
  expect(skipped.body.items.map((a: { error: string }) => a.error)).toEqual([
    'the rollout was aborted before the agent was pushed',
    'the rollout was aborted before the agent was pushed',
  ]);
  expect(await eventTypes(rollout.id)).toEqual(
    expect.arrayContaining([
      'rollout.created',
      'rollout.started',
      'rollout.paused',
      'rollout.resumed',
      'rollout.aborted',
    ]),
  );
  // Every operation is in the audit trail, refused ones too. In call order: the chain (seq)
  // appends refused calls in batches, up to 200 ms after a later successful write.
  const audited = await env.t.database
    .db('audit_calls')
    .where({ method: 'POST', resource_type: 'rollout', resource_id: rollout.id })
    .orderBy([{ column: 'occurred_at' }, { column: 'seq' }])
    .select('route', 'status');
  expect(audited.map((row) => `${row.route} ${row.status}`)).toEqual([
    '/api/rollouts 201',
    '/api/rollouts/{id}/start 200',
    '/api/rollouts/{id}/resume 409',
    '/api/rollouts/{id}/pause 200',
    '/api/rollouts/{id}/resume 412',
    '/api/rollouts/{id}/resume 200',
    '/api/rollouts/{id}/abort 200',
  ]);
}, 60_000);

test("a batch's progress moves the rollout's ETag: a copy read before is not answered 304, and its If-Match still acts", async () => {
  // Each agent applies when the test lets it.
  const gates = new Map<string, () => void>();
  const { groupId, ids } = await env.fleet(2, {
    apply: (agent) => new Promise<undefined>((resolve) => gates.set(agent.id, () => resolve(undefined))),
  });
  const [v1] = await publishConfiguration(env.t, env.operator, ['gated: true\n']);
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2 },
  });
  expect((await call('POST', `/api/rollouts/${rollout.id}/start`)).status).toBe(200);
  try {
    const applying = await eventually(async () => {
      const res = await call('GET', `/api/rollouts/${rollout.id}`);
      expect(res.body.progress).toMatchObject({ applying: 2 });
      expect(gates.size).toBe(2);
      return res;
    }, 15_000);
    const before = applying.headers.get('etag')!;
    const conditional = () => call('GET', `/api/rollouts/${rollout.id}`, undefined, { 'if-none-match': before });
    expect((await conditional()).status).toBe(304);

    gates.get(ids[0]!)!();
    const moved = await eventually(async () => {
      const res = await conditional();
      expect(res.status).toBe(200);
      return res;
    }, 15_000);
    expect(moved.body).toMatchObject({ state: 'running', progress: { applying: 1, succeeded: 1 } });
    // The same row version: only the progress moved, and a write decided on the copy before still acts.
    expect(moved.headers.get('etag')!.split('.')[0]).toBe(before.split('.')[0]);
    expect(moved.headers.get('etag')).not.toBe(before);
    const aborted = await call('POST', `/api/rollouts/${rollout.id}/abort`, undefined, { 'if-match': before });
    expect(aborted.status).toBe(200);
    expect(aborted.body.state).toBe('aborted');
  } finally {
    for (const release of gates.values()) release();
  }
}, 60_000);

test('a batch given as a fractional percentage (2.5 %) starts, is judged by the policies, and completes', async () => {
  const { groupId } = await env.fleet(1);
  const [v1] = await publishConfiguration(env.t, env.operator, ['fraction: true\n']);
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 2.5 },
  });
  const started = await call('POST', `/api/rollouts/${rollout.id}/start`);
  expect(started.status).toBe(200);
  const done = await waitForState(rollout.id, 'completed');
  expect(done.body.strategy.batchPercent).toBe(2.5);
  expect(done.body.progress).toMatchObject({ total: 1, succeeded: 1 });
}, 60_000);

test('rollback after completion restores the previous version on every agent', async () => {
  const { groupId, fleet } = await env.fleet(3);
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['level: info\n', 'level: debug\n']);
  const strategy = { batchPercent: 50 };
  const first = await createRollout({
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy,
  });
  await call('POST', `/api/rollouts/${first.id}/start`);
  await waitForState(first.id, 'completed');

  const second = await createRollout({
    configurationId: v2!.configurationId,
    version: 2,
    target: { groupIds: [groupId] },
    strategy,
  });
  await call('POST', `/api/rollouts/${second.id}/start`);
  await waitForState(second.id, 'completed');
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v2!.contentHash);

  // The workflow had finished: the rollback starts it again.
  const rollingBack = await call('POST', `/api/rollouts/${second.id}/rollback`);
  expect(rollingBack.status).toBe(200);
  expect(rollingBack.body.state).toBe('rolling-back');
  const rolledBack = await waitForState(second.id, 'rolled-back');
  expect(rolledBack.body.rollback).toEqual({ pending: 0, applying: 0, succeeded: 3, failed: 0, skipped: 0 });
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  const agents = await call('GET', `/api/agents?groupId=${groupId}`);
  for (const agent of agents.body.items)
    expect(agent.applied).toMatchObject({ configurationId: v1!.configurationId, version: 1, status: 'APPLIED' });

  const again = await call('POST', `/api/rollouts/${second.id}/rollback`);
  expect(again.status).toBe(409);
  expect(await eventTypes(second.id)).toEqual(
    expect.arrayContaining(['rollout.completed', 'rollout.rolling-back', 'rollout.rolled-back']),
  );
}, 60_000);

test('failures above maxFailurePercent pause the rollout (onFailure pause), naming why', async () => {
  const { groupId } = await env.fleet(4, { apply: () => 'exporter otlp: connection refused' });
  const [v1] = await publishConfiguration(env.t, env.operator, ['x: 1\n']);
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2, maxFailurePercent: 10, onFailure: 'pause' },
  });
  await call('POST', `/api/rollouts/${rollout.id}/start`);
  const paused = await waitForState(rollout.id, 'paused');
  expect(paused.body.reason).toMatch(/2 of 2 agents of batch 1 failed/);
  expect(paused.body.progress).toMatchObject({ failed: 2, pending: 2, succeeded: 0 });
  const failed = await call('GET', `/api/rollouts/${rollout.id}/agents?state=failed`);
  expect(failed.body.items).toHaveLength(2);
  expect(failed.body.items[0].error).toBe('exporter otlp: connection refused');
}, 60_000);

test('failures above maxFailurePercent roll back (onFailure rollback) to what each agent had', async () => {
  const { groupId, fleet } = await env.fleet(4, {
    apply: (_agent, config) =>
      Object.values(config.files).some((f) => f.body.includes('broken')) ? 'invalid pipeline' : undefined,
  });
  const [good, bad] = await publishConfiguration(env.t, env.operator, ['ok: true\n', 'broken: true\n']);
  const first = await createRollout({
    configurationId: good!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 100 },
  });
  await call('POST', `/api/rollouts/${first.id}/start`);
  await waitForState(first.id, 'completed');

  const second = await createRollout({
    configurationId: bad!.configurationId,
    version: 2,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2, onFailure: 'rollback' },
  });
  await call('POST', `/api/rollouts/${second.id}/start`);
  const rolledBack = await waitForState(second.id, 'rolled-back');
  expect(rolledBack.body.reason).toMatch(/failed/);
  expect(rolledBack.body.progress).toMatchObject({ failed: 2, pending: 0, skipped: 2 });
  const never = await call('GET', `/api/rollouts/${second.id}/agents?state=skipped`);
  expect(never.body.items[0].error).toBe('the rollout was rolled back before the agent was pushed');
  expect(rolledBack.body.rollback).toMatchObject({ succeeded: 2 });
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(good!.contentHash);
  expect(await eventTypes(second.id)).toEqual([
    'rollout.created',
    'rollout.started',
    'rollout.progress',
    'rollout.rolling-back',
    'rollout.rolled-back',
  ]);
}, 60_000);

test('start is refused with the exact 422 when a policy denies an agent; the rollout stays pending', async () => {
  const { groupId, ids } = await env.fleet(2);
  const [v1] = await publishConfiguration(env.t, env.operator, ['y: 1\n']);
  const policy = await call('POST', '/api/policies', {
    name: `no-pushes-${groupId.slice(0, 8)}`,
    expression: 'false',
    scope: [groupId],
  });
  expect(policy.status).toBe(201);
  const approved = await env.t.call('POST', `/api/policies/${policy.body.id}/approve`, {
    token: await env.t.token('default.admin'),
  });
  expect(approved.status).toBe(200);
  try {
    const rollout = await createRollout({
      configurationId: v1!.configurationId,
      version: 1,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 1 },
    });
    const refused = await call('POST', `/api/rollouts/${rollout.id}/start`);
    expect(refused.status).toBe(422);
    expect(refused.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(refused.body).toMatchObject({
      type: expect.stringMatching(/policy-denied$/),
      title: 'Policy denied the push',
      status: 422,
      detail: `Policy '${policy.body.name}' denied the push to agent ${ids[0]}. 1 more denial in violations.`,
      policyId: policy.body.id,
      agentId: ids[0],
    });
    expect(refused.body.violations).toHaveLength(2);
    expect((await call('GET', `/api/rollouts/${rollout.id}`)).body.state).toBe('pending');
    expect(await eventTypes(rollout.id)).toEqual(['rollout.created']);
  } finally {
    await call('PUT', `/api/policies/${policy.body.id}`, {
      name: policy.body.name,
      expression: 'false',
      scope: [groupId],
      enabled: false,
    });
  }
}, 60_000);

test('the worker killed mid-rollout and started again: an operation meanwhile is a 503 at once; the rollout resumes, no agent pushed twice, none skipped', async () => {
  const slowApply = () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1500));
  const { groupId, fleet } = await env.fleet(6, { apply: slowApply });
  const [v1] = await publishConfiguration(env.t, env.operator, ['durable: true\n']);
  const pushes = new Map<string, number>();
  for (const agent of fleet.agents) {
    agent.on('message', (message: { remoteConfig?: { configHash: Uint8Array } }) => {
      if (message.remoteConfig && Buffer.from(message.remoteConfig.configHash).toString('hex') === v1!.contentHash) {
        pushes.set(agent.id, (pushes.get(agent.id) ?? 0) + 1);
      }
    });
  }
  // The worker runs as its own process, so it can be killed like a crashed one.
  await env.stopWorker();
  let worker = startScript('worker/main.ts', [], env.workerEnv());
  try {
    await untilWorkerPolls(env, worker.pid!);
    const rollout = await createRollout({
      configurationId: v1!.configurationId,
      version: 1,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 2 },
    });
    expect((await call('POST', `/api/rollouts/${rollout.id}/start`)).status).toBe(200);
    await eventually(async () => {
      const res = await call('GET', `/api/rollouts/${rollout.id}`);
      expect(res.body.currentBatch).toBe(2);
      expect(res.body.progress.applying).toBe(2);
    }, 20_000);
    worker.kill('SIGKILL');
    await new Promise((resolve) => worker.once('exit', resolve));
    // With no worker left, an operation is refused at once, nothing sent (not a wait for its deadline).
    await eventually(
      async () => expect(await workerPresent(env.t.database.db, env.taskQueue)).toBe(false),
      PRESENCE_SETTLE_MS + 10_000,
    );
    const refused = await call('POST', `/api/rollouts/${rollout.id}/pause`);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(refused.body.detail).toBe(
      `No worker is running for task queue ${env.taskQueue}, so the rollout's workflow cannot take the operation; nothing was sent. Start a worker or read its logs, then retry.`,
    );
    worker = startScript('worker/main.ts', [], env.workerEnv());

    const done = await waitForState(rollout.id, 'completed', 45_000);
    expect(done.body.progress).toEqual({
      total: 6,
      pending: 0,
      applying: 0,
      deferred: 0,
      succeeded: 6,
      failed: 0,
      skipped: 0,
    });
    expect(done.body.batches.map((b: { total: number }) => b.total)).toEqual([2, 2, 2]);
    expect([...pushes.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    const updates = await env.t.database
      .db('events')
      .where({ type: 'rollout.agent-updated' })
      .whereRaw("data->>'rolloutId' = ?", [rollout.id])
      .count<{ n: string }[]>('* as n');
    expect(Number(updates[0]!.n)).toBe(6);
  } finally {
    worker.kill('SIGKILL');
    await env.startWorker();
  }
}, 90_000);

test('agents that join a target group while the rollout runs are included in a later batch', async () => {
  const { groupId } = await env.fleet(2);
  const [v1] = await publishConfiguration(env.t, env.operator, ['join: true\n']);
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1, bakeSeconds: 2 },
  });
  await call('POST', `/api/rollouts/${rollout.id}/start`);
  const late = await env.fleet(1, { groupId });
  const done = await waitForState(rollout.id, 'completed', 30_000);
  expect(done.body.progress).toMatchObject({ total: 3, succeeded: 3 });
  expect(late.fleet.agents[0]!.state.lastConfigHash).toBe(v1!.contentHash);
}, 60_000);

test('an agent is in at most one active rollout; bad strategies and targets are refused with clear problems', async () => {
  const { groupId, ids } = await env.fleet(1);
  const [v1] = await publishConfiguration(env.t, env.operator, ['one: 1\n']);
  const body = {
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1 },
  };
  const first = await createRollout(body);
  const second = await call('POST', '/api/rollouts', { ...body, target: { agentIds: [ids[0]] } });
  expect(second.status).toBe(409);
  expect(second.body.detail).toBe(
    `Agent ${ids[0]} is already in active rollout ${first.id}; an agent is in at most one active rollout.`,
  );

  const bad = async (patch: Record<string, unknown>) =>
    (await call('POST', '/api/rollouts', { ...body, ...patch })).body;
  expect(await bad({ strategy: { batchSize: 1, batchPercent: 10 } })).toMatchObject({
    status: 400,
    errors: [{ path: 'body.strategy', message: 'give exactly one of batchSize and batchPercent' }],
  });
  expect(await bad({ target: {} })).toMatchObject({ status: 400, errors: [{ path: 'body.target' }] });
  expect(await bad({ target: { labelSelector: {} } })).toMatchObject({ status: 400 });
  expect(await bad({ strategy: { batchSize: 0 } })).toMatchObject({ status: 400 });
  expect(await bad({ target: { groupIds: ['00000000-0000-4000-8000-000000000000'] } })).toMatchObject({ status: 404 });
  expect(await bad({ version: 99 })).toMatchObject({ status: 404 });
  const draft = await call('POST', `/api/configurations/${v1!.configurationId}/versions`, { content: 'two: 2\n' });
  expect(await bad({ version: draft.body.version })).toMatchObject({
    status: 409,
    detail: expect.stringContaining('draft'),
  });
  const viewer = await env.t.call('POST', '/api/rollouts', { token: await env.t.token('default.viewer'), body });
  expect(viewer.status).toBe(403);

  // Aborting the pending rollout frees the agent for another.
  expect((await call('POST', `/api/rollouts/${first.id}/abort`)).body.state).toBe('aborted');
  expect((await call('POST', '/api/rollouts', body)).status).toBe(201);
  expect(
    (await call('GET', `/api/rollouts?state=aborted&configurationId=${v1!.configurationId}`)).body.items.map(
      (r: { id: string }) => r.id,
    ),
  ).toEqual([first.id]);
}, 60_000);

test('the Temporal UI names the rollout, finds it by its search attributes, and shows its progress and outcome', async () => {
  const { groupId } = await env.fleet(1);
  const [v1] = await publishConfiguration(env.t, env.operator, ['visible: 1\n']);
  const configuration = (await call('GET', `/api/configurations/${v1!.configurationId}`)).body as { name: string };
  const rollout = await createRollout({
    name: 'Debug exporter for the canary',
    description: 'Incident 42: we need the raw spans.',
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1 },
  });
  const handle = env.client.workflow.getHandle(`rollout:${rollout.id}`);
  await eventually(async () =>
    expect(await handle.query(rolloutStatusQuery)).toMatchObject({
      state: 'pending',
      currentBatch: 0,
      counts: { progress: { total: 1, pending: 1 }, rollback: null },
    }),
  );
  const started = await handle.describe();
  expect(await started.staticSummary()).toBe(`Debug exporter for the canary: ${configuration.name} v1 → 1 group`);
  const details = await started.staticDetails();
  expect(details).toContain('Incident 42: we need the raw spans.');
  expect(details).toContain(`- Configuration: ${configuration.name} (${v1!.configurationId}), version 1`);
  expect(details).toContain(
    '- Strategy: batches of 1, bake 0 s, apply timeout 300 s, max failures 0 %, on failure pause',
  );

  await call('POST', `/api/rollouts/${rollout.id}/start`);
  const done = await waitForState(rollout.id, 'completed');
  // One batch: the search for a second that finds no agent is not counted.
  expect(done.body.currentBatch).toBe(1);
  // The workflow records its final state just after the database does; visibility follows.
  await eventually(async () => {
    const description = await handle.describe();
    expect(description.type).toBe('rolloutWorkflow');
    expect(description.status.name).toBe('COMPLETED');
    const attributes = description.searchAttributes as Record<string, unknown[]>;
    expect(attributes).toMatchObject({
      TenantId: ['default'],
      RolloutId: [rollout.id],
      ConfigurationId: [v1!.configurationId],
      RolloutState: ['completed'],
    });
  });
  await eventually(async () => {
    const found = [];
    for await (const execution of env.client.workflow.list({
      query: `RolloutId = "${rollout.id}" AND RolloutState = "completed"`,
    }))
      found.push(execution.workflowId);
    expect(found).toEqual([`rollout:${rollout.id}`]);
  });
  // What the UI shows: the result says how the rollout ended; the status query and the
  // current details (the workflow's metadata query) say where it stands.
  expect(await handle.result()).toEqual({
    state: 'completed',
    reason: null,
    outcome: 'completed: 1 succeeded of 1 agents',
    counts: {
      progress: { total: 1, pending: 0, applying: 0, deferred: 0, succeeded: 1, failed: 0, skipped: 0 },
      rollback: null,
    },
    lastBatch: { batch: 1, pushed: 1, succeeded: 1, failed: 0, skipped: 0 },
  });
  expect(await handle.query(rolloutStatusQuery)).toMatchObject({
    state: 'completed',
    currentBatch: 1,
    counts: { progress: { total: 1, succeeded: 1 } },
    lastBatch: { batch: 1, succeeded: 1 },
  });
  const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
  expect(metadata.currentDetails.split('\n')).toEqual([
    `Debug exporter for the canary: ${configuration.name} v1 → 1 group`,
    '',
    '**completed** · batch 1',
    '- Agents: 1 succeeded of 1 agents',
    '- Last batch 1: 1 pushed, 1 succeeded, 0 failed, 0 skipped',
  ]);

  // A rollback of the finished rollout is a new run: it says rolling-back, then rolled-back.
  expect((await call('POST', `/api/rollouts/${rollout.id}/rollback`)).status).toBe(200);
  await waitForState(rollout.id, 'rolled-back');
  await eventually(async () => {
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect((description.searchAttributes as Record<string, unknown[]>).RolloutState).toEqual(['rolled-back']);
  });
  expect(await handle.result()).toMatchObject({ state: 'rolled-back' });
}, 60_000);

test('abort while a batch is being applied: the wait ends at once and the silent agents are given up', async () => {
  const { groupId } = await env.fleet(2, {
    apply: () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 20_000)),
  });
  const [v1] = await publishConfiguration(env.t, env.operator, ['slow: true\n']);
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 2 },
  });
  await call('POST', `/api/rollouts/${rollout.id}/start`);
  await eventually(
    async () => expect((await call('GET', `/api/rollouts/${rollout.id}`)).body.progress.applying).toBe(2),
    15_000,
  );
  expect((await call('POST', `/api/rollouts/${rollout.id}/abort`)).body.state).toBe('aborted');
  const agents = await eventually(async () => {
    const res = await call('GET', `/api/rollouts/${rollout.id}/agents`);
    expect(res.body.items.map((a: { state: string }) => a.state)).toEqual(['failed', 'failed']);
    return res.body.items;
  });
  expect(agents[0].error).toBe('the rollout was aborted before the agent reported');
  const handle = env.client.workflow.getHandle(`rollout:${rollout.id}`);
  await eventually(async () => expect((await handle.describe()).status.name).toBe('COMPLETED'));
  // The cancelled wait ended with the run: the closed run lists no pending activity.
  expect((await handle.describe()).raw.pendingActivities ?? []).toEqual([]);
  // The abort's event is the rollout's last: the agents it gave up on were announced before it.
  const last = await env.t.database
    .db('events')
    .where({ subject: rollout.id })
    .orWhereRaw("data->>'rolloutId' = ?", [rollout.id])
    .orderBy('seq', 'desc')
    .first();
  expect(last.type).toBe('rollout.aborted');
  // The result counts the agents as the abort settled them, not as they were before it.
  expect(await handle.result()).toMatchObject({
    state: 'aborted',
    counts: { progress: { applying: 0, failed: 2 } },
    outcome: expect.stringMatching(/: 2 failed of 2 agents$/),
  });
}, 60_000);

test('rolling back an older rollout leaves the agents a later rollout moved on', async () => {
  const { groupId, fleet } = await env.fleet(2);
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['gen: 1\n', 'gen: 2\n']);
  const target = { groupIds: [groupId] };
  const older = await createRollout({
    configurationId: v1!.configurationId,
    version: 1,
    target,
    strategy: { batchPercent: 100 },
  });
  await call('POST', `/api/rollouts/${older.id}/start`);
  await waitForState(older.id, 'completed');
  const newer = await createRollout({
    configurationId: v2!.configurationId,
    version: 2,
    target,
    strategy: { batchPercent: 100 },
  });
  await call('POST', `/api/rollouts/${newer.id}/start`);
  await waitForState(newer.id, 'completed');

  expect((await call('POST', `/api/rollouts/${older.id}/rollback`)).status).toBe(200);
  const rolledBack = await waitForState(older.id, 'rolled-back');
  expect(rolledBack.body.rollback).toMatchObject({ skipped: 2, succeeded: 0 });
  const agents = await call('GET', `/api/rollouts/${older.id}/agents`);
  expect(agents.body.items[0].rollback).toEqual({
    state: 'skipped',
    error: "a later push replaced this rollout's configuration",
  });
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v2!.contentHash);
}, 60_000);

test('a rollback skips, each with its reason, agents that had nothing before and agents another rollout holds', async () => {
  const fresh = await env.fleet(1);
  const held = await env.fleet(1);
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['held: 1\n', 'held: 2\n']);
  const first = await createRollout({
    configurationId: v1!.configurationId,
    version: 1,
    target: { groupIds: [fresh.groupId, held.groupId] },
    strategy: { batchPercent: 100 },
  });
  await call('POST', `/api/rollouts/${first.id}/start`);
  await waitForState(first.id, 'completed');
  // A later rollout holds one of the agents, scheduled: it has not pushed anything yet.
  const later = await createRollout({
    configurationId: v2!.configurationId,
    version: 2,
    target: { groupIds: [held.groupId] },
    strategy: { batchPercent: 100 },
    startAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  await call('POST', `/api/rollouts/${later.id}/start`);
  await waitForState(later.id, 'scheduled');

  expect((await call('POST', `/api/rollouts/${first.id}/rollback`)).status).toBe(200);
  const rolledBack = await waitForState(first.id, 'rolled-back');
  expect(rolledBack.body.rollback).toMatchObject({ skipped: 2, succeeded: 0 });
  const items: Array<{ agentId: string; rollback: unknown }> = (await call('GET', `/api/rollouts/${first.id}/agents`))
    .body.items;
  const rollbackOf = (agentId: string) => items.find((item) => item.agentId === agentId)?.rollback;
  expect(rollbackOf(fresh.ids[0]!)).toEqual({
    state: 'skipped',
    error: 'the agent had no configuration before this rollout',
  });
  expect(rollbackOf(held.ids[0]!)).toEqual({ state: 'skipped', error: 'the agent is in another active rollout' });
  // Nothing was pushed back: both agents keep the version they applied.
  for (const agent of [...fresh.fleet.agents, ...held.fleet.agents])
    expect(agent.state.lastConfigHash).toBe(v1!.contentHash);
  await call('POST', `/api/rollouts/${later.id}/abort`);
}, 60_000);

test('a rollout and its rollback settle a whole batch at once: every agent result is recorded and an event', async () => {
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['a: 1\n', 'a: 2\n']);
  const groupId = (await call('POST', '/api/groups', { name: 'settled-at-once' })).body.id as string;
  // Agents that have v1 and never connect: the rollout gives up on each after the apply
  // timeout, and the rollback finds each already on v1. Both settle every agent at once.
  // (20,000 of them, past one statement's parameters: npm run bench:rollout-settle.)
  const agents = 2_000;
  const ids = await seedAgents(env.t.database.db, 'default', agents, () => ({ group_id: groupId, status: 'offline' }));
  await env.t.database.db('agents').whereRaw('id = ANY(?::uuid[])', [ids]).update({
    desired_configuration_id: v1!.configurationId,
    desired_version: v1!.version,
    desired_hash: v1!.contentHash,
    applied_configuration_id: v1!.configurationId,
    applied_version: v1!.version,
    applied_hash: v1!.contentHash,
    applied_status: 'APPLIED',
  });
  const rollout = await createRollout({
    configurationId: v2!.configurationId,
    version: v2!.version,
    target: { groupIds: [groupId] },
    // Offline agents failed past the apply timeout (not deferred): the rollback then has each to settle.
    strategy: { batchPercent: 100, applyTimeoutSeconds: 1, maxFailurePercent: 100, offlineAgents: 'fail' },
  });
  expect((await call('POST', `/api/rollouts/${rollout.id}/start`)).status).toBe(200);
  const completed = await waitForState(rollout.id, 'completed', 60_000);
  expect(completed.body.progress).toMatchObject({ total: agents, failed: agents });

  expect((await call('POST', `/api/rollouts/${rollout.id}/rollback`)).status).toBe(200);
  const rolledBack = await waitForState(rollout.id, 'rolled-back', 60_000);
  expect(rolledBack.body.rollback).toEqual({ pending: 0, applying: 0, succeeded: agents, failed: 0, skipped: 0 });
  const agent = await call('GET', `/api/rollouts/${rollout.id}/agents?limit=1`);
  expect(agent.body.items[0]).toMatchObject({ state: 'failed', rollback: { state: 'succeeded', error: null } });
  expect(await agentUpdates(rollout.id)).toBe(2 * agents);
}, 120_000);

async function agentUpdates(rolloutId: string): Promise<number> {
  const [row] = await env.t.database
    .db('events')
    .where({ type: 'rollout.agent-updated' })
    .whereRaw("data->>'rolloutId' = ?", [rolloutId])
    .count<{ n: string }[]>('* as n');
  return Number(row!.n);
}

test('aborting a rollout of 14,000 agents it never pushed settles each as skipped, with an event each', async () => {
  // More agents than one INSERT of events can carry (65,535 parameters, five an event),
  // settled by one transition: the events go in several statements, all in its transaction.
  const [v1] = await publishConfiguration(env.t, env.operator, ['never: pushed\n']);
  const groupId = (await call('POST', '/api/groups', { name: 'never-pushed' })).body.id as string;
  const agents = 14_000;
  await seedAgents(env.t.database.db, 'default', agents, () => ({ group_id: groupId, status: 'offline' }));
  const rollout = await createRollout({
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchPercent: 10 },
  });
  const aborted = await call('POST', `/api/rollouts/${rollout.id}/abort`);
  expect(aborted.status).toBe(200);
  expect(aborted.body.progress).toEqual({
    total: agents,
    pending: 0,
    applying: 0,
    deferred: 0,
    succeeded: 0,
    failed: 0,
    skipped: agents,
  });
  expect(aborted.body.currentBatch).toBe(0);
  const agent = await call('GET', `/api/rollouts/${rollout.id}/agents?limit=1`);
  expect(agent.body.items[0]).toMatchObject({
    batch: null,
    state: 'skipped',
    error: 'the rollout was aborted before the agent was pushed',
  });
  expect(await agentUpdates(rollout.id)).toBe(agents);
  // Temporal reads "Completed" for it (an abort pages no one); the result says it was aborted.
  const result = await env.client.workflow.getHandle(`rollout:${rollout.id}`).result();
  expect(result).toMatchObject({
    state: 'aborted',
    outcome: expect.stringMatching(/^aborted \(aborted by .+\): 14000 skipped of 14000 agents$/),
  });
}, 120_000);

test('a rollout has an optional name and description: in the list, the detail and its events, and the list filters by name', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['named: 1\n']);
  const target = async () => ({
    groupIds: [
      (await call('POST', '/api/groups', { name: `named-${Math.random().toString(36).slice(2, 10)}` })).body.id,
    ],
  });
  const body = { configurationId: v1!.configurationId, version: 1, strategy: { batchSize: 1 } };
  const named = await call('POST', '/api/rollouts', {
    ...body,
    target: await target(),
    name: '  Raise the batch timeout  ',
    description: 'The exporter times out under load.\nSee incident 7.',
  });
  expect(named.status).toBe(201);
  expect(named.body).toMatchObject({
    name: 'Raise the batch timeout',
    description: 'The exporter times out under load.\nSee incident 7.',
  });
  const unnamed = await createRollout({ ...body, target: await target() });
  expect(unnamed).toMatchObject({ name: null, description: null });

  const listed = await call('GET', `/api/rollouts?configurationId=${v1!.configurationId}&q=BATCH%20time`);
  expect(listed.body.items.map((r: { id: string; name: string }) => [r.id, r.name])).toEqual([
    [named.body.id, 'Raise the batch timeout'],
  ]);
  expect((await call('GET', `/api/rollouts?q=${encodeURIComponent('100%_')}`)).body.items).toEqual([]);
  expect((await call('GET', `/api/rollouts/${named.body.id}`)).body.description).toBe(named.body.description);

  expect((await call('POST', `/api/rollouts/${named.body.id}/abort`)).status).toBe(200);
  const events = await env.t.database
    .db('events')
    .where({ subject: named.body.id })
    .orderBy('seq')
    .select('type', 'data');
  expect(
    events.map((e: { type: string; data: { name: string; description: string } }) => [
      e.type,
      e.data.name,
      e.data.description,
    ]),
  ).toEqual([
    ['rollout.created', 'Raise the batch timeout', named.body.description],
    ['rollout.aborted', 'Raise the batch timeout', named.body.description],
  ]);

  const bad = async (patch: Record<string, unknown>) =>
    (await call('POST', '/api/rollouts', { ...body, target: await target(), ...patch })).body;
  for (const name of ['', '   ', 'x'.repeat(201), 'tab\there', 'bell\u0007', 'lone \ud800', 42]) {
    expect(await bad({ name })).toMatchObject({ status: 400, errors: [{ path: 'body.name' }] });
  }
  expect(await bad({ description: 'x'.repeat(2001) })).toMatchObject({
    status: 400,
    errors: [{ path: 'body.description' }],
  });
  expect(await bad({ description: null })).toMatchObject({ status: 400, errors: [{ path: 'body.description' }] });
  expect((await call('GET', `/api/rollouts?q=${'x'.repeat(201)}`)).status).toBe(400);
}, 60_000);

test('the list filters by state, configuration and creator, pages newest first, and refuses bad filters', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['listed: 1\n']);
  const admin = await env.t.token('default.admin');
  const create = async (token: string) => {
    const groupId = (await call('POST', '/api/groups', { name: `list-${Math.random().toString(36).slice(2, 10)}` }))
      .body.id;
    const res = await env.t.call('POST', '/api/rollouts', {
      token,
      body: {
        configurationId: v1!.configurationId,
        version: v1!.version,
        target: { groupIds: [groupId] },
        strategy: { batchSize: 1 },
      },
    });
    expect(res.status).toBe(201);
    return res.body as { id: string; createdBy: string };
  };
  const mine = [await create(env.operator), await create(env.operator), await create(env.operator)];
  const theirs = await create(admin);
  expect(theirs.createdBy).not.toBe(mine[0]!.createdBy);

  const ids = (res: { body: { items: Array<{ id: string }> } }) => res.body.items.map((r) => r.id);
  const byConfiguration = `/api/rollouts?configurationId=${v1!.configurationId}`;
  expect(ids(await call('GET', `${byConfiguration}&createdBy=${encodeURIComponent(theirs.createdBy)}`))).toEqual([
    theirs.id,
  ]);
  expect(ids(await call('GET', `${byConfiguration}&state=running`))).toEqual([]);

  // Newest first, two a page, following nextCursor (and the Link header says the same).
  const seen: string[] = [];
  let next: string | null = `${byConfiguration}&state=pending&limit=2`;
  while (next) {
    const page: Awaited<ReturnType<typeof call>> = await call('GET', next);
    expect(page.status).toBe(200);
    seen.push(...ids(page));
    if (page.body.nextCursor)
      expect(page.headers.get('link')).toContain(`cursor=${encodeURIComponent(page.body.nextCursor)}`);
    next = page.body.nextCursor
      ? `${byConfiguration}&state=pending&limit=2&cursor=${encodeURIComponent(page.body.nextCursor)}`
      : null;
  }
  expect(seen).toEqual([theirs.id, ...mine.map((r) => r.id).reverse()]);

  for (const query of [
    'state=bogus',
    'configurationId=not-a-uuid',
    'createdBy=',
    'limit=0',
    'cursor=%00%01',
    'colour=blue',
  ]) {
    const res = await call('GET', `/api/rollouts?${query}`);
    expect({ query, status: res.status, type: res.body.type }).toEqual({
      query,
      status: 400,
      type: expect.stringMatching(/validation-failed$/),
    });
  }
}, 60_000);
