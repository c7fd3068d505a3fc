/**
 * The receiver's side of a federated rollout, called as a peer installation calls it (with
 * a `peer` PAT): the dry run, the idempotent creation by key, following and operating it.
 */
import { randomUUID } from 'node:crypto';
import { expectConfigurationCreatedAsShown } from '../support/events';
import { eventually } from '../support/eventually';
import { startInstallation, type Installation } from '../support/federation';

const ERRORS = 'http://fleet.test/errors';
const PATH = '/api/federation/incoming/rollouts';

let b: Installation;
let peer: string;
beforeAll(async () => {
  b = await startInstallation('b');
  peer = await b.t.pat('peer', { name: 'peer-a' });
}, 60_000);
afterAll(() => b?.close());

const keyOf = (position = 0) => `${randomUUID()}:${randomUUID()}:${position}`;
const call = (method: string, path: string, body?: unknown, token = peer) => b.t.call(method, path, { token, body });

const request = (groupId: string, content: string, name = `collector-${randomUUID().slice(0, 8)}`) => ({
  configuration: { name, format: 'yaml', content },
  target: { groupIds: [groupId] },
  strategy: { batchSize: 1 },
  name: 'from a',
});

test('a retried PUT creates one version and one rollout; the same content is the same version', async () => {
  const { groupId, fleet } = await b.fleet(2);
  const key = keyOf();
  const body = request(groupId, 'receivers:\n  otlp: {}\n');
  const first = await call('PUT', `${PATH}/${key}`, body);
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({ version: 1, state: 'running', progress: { total: 2 } });
  const again = await call('PUT', `${PATH}/${key}`, body);
  expect(again.status).toBe(200);
  expect(again.body.rolloutId).toBe(first.body.rolloutId);
  expect(again.body.configurationId).toBe(first.body.configurationId);

  const db = b.t.database.db;
  expect(await db('rollouts').where({ federation_key: key }).pluck('id')).toEqual([first.body.rolloutId]);
  expect(await db('configuration_versions').where({ configuration_id: first.body.configurationId })).toHaveLength(1);
  const rollout = await b.t.call('GET', `/api/rollouts/${first.body.rolloutId}`, { token: b.operator });
  expect(rollout.body).toMatchObject({ name: 'from a', createdBy: 'peer-a' });
  const copied = await b.t.call('GET', `/api/configurations/${first.body.configurationId}`, { token: b.operator });
  await expectConfigurationCreatedAsShown(db, first.body.configurationId, copied.body);

  const followed = await eventually(async () => {
    const res = await call('GET', `${PATH}/${key}`);
    expect(res.body.state).toBe('completed');
    return res.body;
  }, 30_000);
  expect(followed).toEqual({
    ...first.body,
    state: 'completed',
    reason: null,
    progress: expect.objectContaining({ succeeded: 2 }),
  });
  for (const agent of fleet.agents) expect(agent.state.appliedStatus).toBe('APPLIED');

  // Another federated rollout of the same content reuses that version; new content is a new one.
  const same = await call('PUT', `${PATH}/${keyOf()}`, {
    ...body,
    target: { groupIds: [(await b.fleet(1)).groupId] },
  });
  expect(same.body).toMatchObject({ configurationId: first.body.configurationId, version: 1 });
  const other = await call('PUT', `${PATH}/${keyOf()}`, {
    ...body,
    target: { groupIds: [(await b.fleet(1)).groupId] },
    configuration: { ...body.configuration, content: 'receivers:\n  otlp: { protocols: {} }\n' },
  });
  expect(other.status).toBe(200);
  expect(other.body).toMatchObject({ configurationId: first.body.configurationId, version: 2 });
}, 60_000);

test('PUTs of one key at once (a peer retrying a call slow to answer) all answer the one rollout, started once', async () => {
  const { groupId } = await b.fleet(1);
  const key = keyOf();
  const body = request(groupId, 'twins: 1\n');
  const answers = await Promise.all(Array.from({ length: 5 }, () => call('PUT', `${PATH}/${key}`, body)));
  expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
  expect(new Set(answers.map((answer) => answer.body.rolloutId)).size).toBe(1);
  const rolloutId = answers[0]!.body.rolloutId as string;
  expect(await b.t.database.db('rollouts').where({ federation_key: key })).toHaveLength(1);
  expect(await b.t.database.db('events').where({ subject: rolloutId, type: 'rollout.started' })).toHaveLength(1);
}, 30_000);

test('the dry run keeps nothing; a deny is 422 as the rollouts API answers it', async () => {
  const { groupId, ids } = await b.fleet(1);
  const body = request(groupId, 'a: 1\n');
  const allowed = await call('POST', `${PATH}/evaluate`, body);
  expect(allowed.status).toBe(200);
  expect(allowed.body).toEqual({ allowed: true, agents: 1 });
  expect(await b.t.database.db('configurations').where({ name: body.configuration.name })).toEqual([]);

  const policy = await b.t.call('POST', '/api/policies', {
    token: b.admin,
    body: { name: `deny-${randomUUID().slice(0, 8)}`, expression: 'false', scope: [groupId] },
  });
  const second = await b.t.pat('admin', { name: 'second-admin' });
  expect((await b.t.call('POST', `/api/policies/${policy.body.id}/approve`, { token: second })).status).toBe(200);
  const denied = await call('POST', `${PATH}/evaluate`, body);
  expect(denied.status).toBe(422);
  expect(denied.body).toMatchObject({ type: `${ERRORS}/policy-denied`, policyId: policy.body.id, agentId: ids[0] });
  const put = await call('PUT', `${PATH}/${keyOf()}`, body);
  expect(put.status).toBe(422);
  expect(await b.t.database.db('configurations').where({ name: body.configuration.name })).toEqual([]);
}, 30_000);

test('operations are passed to the rollout; one its state does not allow is 409', async () => {
  const { groupId } = await b.fleet(3);
  const key = keyOf(1);
  const created = await call('PUT', `${PATH}/${key}`, {
    ...request(groupId, 'b: 1\n'),
    strategy: { batchSize: 1, bakeSeconds: 30 },
  });
  expect(created.status).toBe(200);
  expect((await call('POST', `${PATH}/${key}/resume`)).status).toBe(409);
  const paused = await call('POST', `${PATH}/${key}/pause`);
  expect(paused.status).toBe(200);
  expect(paused.body.state).toBe('paused');
  expect((await call('POST', `${PATH}/${key}/resume`)).body.state).toBe('running');
  const aborted = await call('POST', `${PATH}/${key}/abort`);
  expect(aborted.body).toMatchObject({ state: 'aborted', reason: 'aborted by peer-a' });
  const refused = await call('POST', `${PATH}/${key}/pause`);
  expect(refused.status).toBe(409);
  expect(refused.body.type).toBe(`${ERRORS}/invalid-state-transition`);
}, 30_000);

test('a configuration managed by Git here is not written to (409 managed-by-git)', async () => {
  const { groupId } = await b.fleet(1);
  const name = `git-managed-${randomUUID().slice(0, 8)}`;
  const source = await b.t.database
    .db('git_sources')
    .insert({
      id: randomUUID(),
      tenant_id: 'default',
      name: `src-${name}`,
      repo_url: 'https://git.example/repo.git',
      branch: 'main',
      path: '',
      poll_interval_seconds: 60,
      created_by: 'test',
    })
    .returning('id');
  await b.t.database.db('configurations').insert({
    tenant_id: 'default',
    name,
    description: '',
    format: 'yaml',
    labels: {},
    managed_by: source[0].id,
  });
  const res = await call('PUT', `${PATH}/${keyOf()}`, request(groupId, 'c: 1\n', name));
  expect(res.status).toBe(409);
  expect(res.body.type).toBe(`${ERRORS}/managed-by-git`);
});

test('bad keys and bodies are 400; an unknown key 404; only federate may call', async () => {
  const { groupId } = await b.fleet(1);
  const good = request(groupId, 'd: 1\n');
  const cases: Array<[string, string, unknown, number]> = [
    ['PUT', `${PATH}/not-a-key`, good, 400],
    ['PUT', `${PATH}/${randomUUID()}:${randomUUID()}:x`, good, 400],
    ['GET', `${PATH}/${keyOf()}`, undefined, 404],
    ['POST', `${PATH}/${keyOf()}/pause`, undefined, 404],
    ['PUT', `${PATH}/${keyOf()}`, { ...good, configuration: { ...good.configuration, content: 'a: [' } }, 400],
    ['PUT', `${PATH}/${keyOf()}`, { ...good, configuration: { ...good.configuration, format: 'xml' } }, 400],
    ['PUT', `${PATH}/${keyOf()}`, { ...good, configuration: { ...good.configuration, name: '../x' } }, 400],
    ['PUT', `${PATH}/${keyOf()}`, { ...good, strategy: {} }, 400],
    ['PUT', `${PATH}/${keyOf()}`, { ...good, target: { groupIds: [randomUUID()] } }, 404],
    ['POST', `${PATH}/evaluate`, { ...good, extra: 1 }, 400],
  ];
  for (const [method, path, body, status] of cases) {
    const res = await call(method, path, body);
    expect({ method, path, status: res.status }).toEqual({ method, path, status });
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
  }
  expect((await call('POST', `${PATH}/evaluate`, good, b.operator)).status).toBe(403);
  expect((await call('GET', '/api/rollouts', undefined, peer)).status).toBe(403);
}, 30_000);
