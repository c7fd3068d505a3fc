/**
 * A history per agent, with real agents through two rollouts: every push, report, deferral,
 * failure and rollback is kept, read per agent of a rollout (in order) and per agent across
 * rollouts (newest first), in keyset pages, each read in the audit trail.
 */
import { randomUUID } from 'node:crypto';
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

async function runRollout(body: Record<string, unknown>, until: string): Promise<string> {
  const created = await call('POST', '/api/rollouts', body);
  expect(created.status).toBe(201);
  expect((await call('POST', `/api/rollouts/${created.body.id}/start`)).status).toBe(200);
  await eventually(async () => expect((await call('GET', `/api/rollouts/${created.body.id}`)).body.state).toBe(until));
  return created.body.id as string;
}

type Entry = { kind: string; version: number | null; detail: string | null; rollout: { id: string } | null };
const kindsAndVersions = (items: Entry[]) => items.map((entry) => `${entry.kind} v${entry.version}`);

test("each agent's pushes, reports, deferral, failure and rollback are kept, per rollout and across rollouts", async () => {
  const [v1, v2] = await publishConfiguration(env.t, env.operator, ['history: one\n', 'history: two\n']);
  const { groupId, fleet } = await env.fleet(3, {
    apply: (agent, config) =>
      config.hash === v2!.contentHash && agent === fleet.agents[1] ? 'exporter otlp: connection refused' : undefined,
  });
  const [steady, failing, laptop] = fleet.agents as [
    (typeof fleet.agents)[0],
    (typeof fleet.agents)[0],
    (typeof fleet.agents)[0],
  ];
  const target = { groupIds: [groupId] };
  const first = await runRollout(
    {
      name: 'history v1',
      configurationId: v1!.configurationId,
      version: v1!.version,
      target,
      strategy: { batchSize: 3 },
    },
    'completed',
  );

  // v2: the laptop is closed (deferred), one agent fails, the rollout rolls back.
  await laptop.stop();
  await eventually(async () => expect((await call('GET', `/api/agents/${laptop.id}`)).body.status).toBe('offline'));
  const second = await runRollout(
    {
      name: 'history v2',
      configurationId: v2!.configurationId,
      version: v2!.version,
      target,
      strategy: { batchSize: 3, onFailure: 'rollback' },
    },
    'rolled-back',
  );

  const inRollout = async (rolloutId: string, agentId: string) => {
    const res = await call('GET', `/api/rollouts/${rolloutId}/agents/${agentId}/history`);
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    return res.body.items as Entry[];
  };
  expect(kindsAndVersions(await inRollout(second, steady.id))).toEqual([
    'pushed v2',
    'applied v2',
    'rollback-pushed v1',
    'rollback-applied v1',
  ]);
  const failed = await inRollout(second, failing.id);
  expect(kindsAndVersions(failed)).toEqual(['pushed v2', 'failed v2', 'rollback-pushed v1', 'rollback-applied v1']);
  expect(failed[1]).toMatchObject({ batch: 1, detail: 'exporter otlp: connection refused' });
  const deferred = await inRollout(second, laptop.id);
  expect(kindsAndVersions(deferred)).toEqual(['deferred v2', 'skipped v2']);
  expect(deferred[1]!.detail).toBe('the rollout was rolled back before the agent came online');

  // Across rollouts, newest first, two a page, with the rollout that did each.
  const seen: Entry[] = [];
  let next: string | null = `/api/agents/${steady.id}/history?limit=2`;
  while (next) {
    const page: { status: number; body: { items: Entry[]; nextCursor: string | null } } = await call('GET', next);
    expect(page.status).toBe(200);
    seen.push(...page.body.items);
    next = page.body.nextCursor && `/api/agents/${steady.id}/history?limit=2&cursor=${page.body.nextCursor}`;
  }
  expect(kindsAndVersions(seen)).toEqual([
    'rollback-applied v1',
    'rollback-pushed v1',
    'applied v2',
    'pushed v2',
    'applied v1',
    'pushed v1',
  ]);
  expect(seen.map((entry) => entry.rollout?.id)).toEqual([second, second, second, second, first, first]);
  expect(seen[5]).toMatchObject({
    rollout: { id: first, name: 'history v1', createdBy: expect.any(String) },
    configurationId: v1!.configurationId,
    contentHash: v1!.contentHash,
    at: expect.any(String),
  });
  const onlyFirst = await call('GET', `/api/agents/${steady.id}/history?rolloutId=${first}`);
  expect(kindsAndVersions(onlyFirst.body.items)).toEqual(['applied v1', 'pushed v1']);

  // Each read is in the audit trail, with the resource it read.
  const requestId = `history-${randomUUID()}`;
  await call('GET', `/api/agents/${steady.id}/history`, undefined, { 'x-request-id': requestId });
  const auditor = await env.t.token('default.auditor');
  await eventually(async () => {
    const res = await env.t.call('GET', `/api/audit/events?requestId=${requestId}`, { token: auditor });
    expect(res.body.items).toEqual([
      expect.objectContaining({
        method: 'GET',
        route: '/api/agents/{id}/history',
        resourceType: 'agent',
        resourceId: steady.id,
        status: 200,
      }),
    ]);
  });
}, 120_000);

test('unknown agents, agents not in the rollout and foreign cursors are refused clearly', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['history: refused\n']);
  const { groupId, ids } = await env.fleet(1);
  const other = await env.fleet(1);
  const rollout = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1 },
  });
  const unknown = '00000000-0000-4000-8000-000000000000';
  expect((await call('GET', `/api/agents/${unknown}/history`)).body).toMatchObject({
    status: 404,
    detail: `No agent with id '${unknown}'.`,
  });
  expect((await call('GET', `/api/rollouts/${rollout.body.id}/agents/${other.ids[0]}/history`)).body).toMatchObject({
    status: 404,
    detail: `No agent of this rollout with id '${other.ids[0]}'.`,
  });
  expect((await call('GET', `/api/rollouts/${unknown}/agents/${ids[0]}/history`)).status).toBe(404);
  // A pending rollout's agent has no history yet.
  expect((await call('GET', `/api/rollouts/${rollout.body.id}/agents/${ids[0]}/history`)).body).toMatchObject({
    items: [],
    nextCursor: null,
  });
  for (const bad of ['cursor=nope', 'cursor=WyJ4Il0', 'limit=0', 'rolloutId=x', 'extra=1']) {
    const res = await call('GET', `/api/agents/${ids[0]}/history?${bad}`);
    expect(res.status).toBe(400);
  }
  expect((await call('GET', `/api/agents/not-an-id/history`)).status).toBe(400);
});
