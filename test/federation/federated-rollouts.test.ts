/**
 * Federated rollouts across two real installations (own databases, apis, agent listeners and
 * workers, one Temporal dev server): simulated agents on both, a configuration version on a,
 * its copy on b, and the federated rollout's workflow driving b's rollout through b's API.
 */
import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { federatedRolloutStatusQuery, federatedRolloutWorkflowId } from '../../workflows/definitions';
import { federatedRolloutStateKey } from '../../workflows/search-attributes';
import { seedAgent } from '../support/agents-seed';
import { startTestApp } from '../support/app';
import { publishConfiguration, type PublishedVersion } from '../support/configurations';
import { eventually } from '../support/eventually';
import { recordHistories } from '../support/histories';
import { pair, startInstallation, type Installation } from '../support/federation';
import { expectRolloutCreatedAsShown } from '../support/events';

const ERRORS = 'http://fleet.test/errors';

let a: Installation;
let b: Installation;
let bPeerId: string;
beforeAll(async () => {
  [a, b] = await Promise.all([startInstallation('a'), startInstallation('b')]);
  bPeerId = await pair(a, b);
}, 90_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const create = (body: Record<string, unknown>, token = a.operator) =>
  a.t.call('POST', '/api/federation/rollouts', { token, body });
const get = (id: string) => a.t.call('GET', `/api/federation/rollouts/${id}`, { token: a.operator });
const operate = (id: string, operation: string) =>
  a.t.call('POST', `/api/federation/rollouts/${id}/${operation}`, { token: a.operator });

async function waitFor(id: string, check: (body: any) => void, timeoutMs = 45_000) {
  return eventually(async () => {
    const res = await get(id);
    check(res.body);
    return res.body;
  }, timeoutMs);
}

const bRollout = (rolloutId: string) => b.t.call('GET', `/api/rollouts/${rolloutId}`, { token: b.operator });

async function publish(content = `exporters:\n  debug: {}\n# ${randomUUID()}\n`): Promise<PublishedVersion> {
  return (await publishConfiguration(a.t, a.operator, [content]))[0]!;
}

const installations = (groupA: string, groupB: string, strategyB: Record<string, unknown> = { batchSize: 1 }) => [
  { peerId: 'local', target: { groupIds: [groupA] }, strategy: { batchSize: 1 } },
  { peerId: bPeerId, target: { groupIds: [groupB] }, strategy: strategyB },
];

test('a federated rollout across a (here) and b runs to completion; b gets the same version', async () => {
  const [fleetA, fleetB] = await Promise.all([a.fleet(2), b.fleet(2)]);
  const version = await publish();
  const created = await create({
    configurationId: version.configurationId,
    version: version.version,
    name: 'collectors everywhere',
    installations: installations(fleetA.groupId, fleetB.groupId),
  });
  expect(created.status).toBe(201);
  expect(created.headers.get('location')).toBe(`/api/federation/rollouts/${created.body.id}`);
  expect(created.body).toMatchObject({ state: 'running', mode: 'sequential', name: 'collectors everywhere' });
  expect(created.body.installations.map((i: any) => [i.name, i.peerId])).toEqual([
    ['a', null],
    ['b', bPeerId],
  ]);

  const done = await waitFor(created.body.id, (body) => expect(body.state).toBe('completed'));
  await recordHistories(a.client, federatedRolloutWorkflowId(created.body.id), 'federated-rollout-completed');
  for (const agent of [...fleetA.fleet.agents, ...fleetB.fleet.agents]) {
    expect(agent.state.lastConfigHash).toBe(version.contentHash);
    expect(agent.state.appliedStatus).toBe('APPLIED');
  }
  expect(done.installations).toEqual([
    expect.objectContaining({ name: 'a', state: 'completed', configurationId: version.configurationId, version: 1 }),
    expect.objectContaining({ name: 'b', state: 'completed', progress: expect.objectContaining({ succeeded: 2 }) }),
  ]);
  // b holds a copy: a configuration of the same name, a published version with the same content hash.
  const onB = done.installations[1];
  const copied = await b.t.call('GET', `/api/configurations/${onB.configurationId}/versions/${onB.version}`, {
    token: b.operator,
  });
  expect(copied.body).toMatchObject({ state: 'published', contentHash: version.contentHash });
  expect((await b.t.call('GET', `/api/configurations/${onB.configurationId}`, { token: b.operator })).body.name).toBe(
    version.name,
  );
  const partOnB = (await bRollout(onB.rolloutId)).body;
  expect(partOnB).toMatchObject({ state: 'completed', progress: { succeeded: 2 } });
  await expectRolloutCreatedAsShown(b.t.database.db, onB.rolloutId, partOnB);
  const onA = done.installations[0];
  const partOnA = (await a.t.call('GET', `/api/rollouts/${onA.rolloutId}`, { token: a.operator })).body;
  await expectRolloutCreatedAsShown(a.t.database.db, onA.rolloutId, partOnA);
  const listed = await a.t.call('GET', '/api/federation/rollouts?state=completed&limit=1000', { token: a.operator });
  expect(listed.body.items.map((item: { id: string }) => item.id)).toContain(created.body.id);
  expect(listed.body.items[0].installations).toBeUndefined();
  const types = await a.t.database.db('events').where({ subject: created.body.id }).orderBy('seq').pluck('type');
  expect(types[0]).toBe('federation.rollout.created');
  expect(types).toContain('federation.rollout.installation-updated');
  expect(types.at(-1)).toBe('federation.rollout.completed');
  // The Temporal UI: the run's state is a search attribute, and its query and details name each part.
  const handle = a.client.workflow.getHandle(federatedRolloutWorkflowId(created.body.id));
  await eventually(async () =>
    expect((await handle.describe()).typedSearchAttributes.get(federatedRolloutStateKey)).toBe('completed'),
  );
  expect(await handle.query(federatedRolloutStatusQuery)).toEqual({
    state: 'completed',
    reason: null,
    mode: 'sequential',
    parts: [
      { position: 0, name: 'a', started: true, ended: 'completed' },
      { position: 1, name: 'b', started: true, ended: 'completed' },
    ],
  });
  const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
  expect(metadata.currentDetails.split('\n').slice(0, 3)).toEqual([
    '**completed** · sequential',
    '- a: completed',
    '- b: completed',
  ]);

  // Rolled back once completed: its workflow starts again and rolls back every installation.
  const rolling = await operate(created.body.id, 'rollback');
  expect(rolling.status).toBe(200);
  expect(rolling.body.state).toBe('rolling-back');
  const rolledBack = await waitFor(created.body.id, (body) => expect(body.state).toBe('rolled-back'));
  expect(rolledBack.installations.map((i: { state: string }) => i.state)).toEqual(['rolled-back', 'rolled-back']);
  expect((await bRollout(onB.rolloutId)).body.state).toBe('rolled-back');
  await eventually(async () =>
    expect((await handle.describe()).typedSearchAttributes.get(federatedRolloutStateKey)).toBe('rolled-back'),
  );
}, 120_000);

test('paused mid-way, resumed, then aborted: each operation reaches b’s rollout', async () => {
  const [fleetA, fleetB] = await Promise.all([a.fleet(1), b.fleet(3)]);
  const version = await publish();
  const created = await create({
    configurationId: version.configurationId,
    version: version.version,
    installations: installations(fleetA.groupId, fleetB.groupId, { batchSize: 1, bakeSeconds: 10 }),
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  // a completes first (sequential), then b's first batch applies and bakes.
  const running = await waitFor(id, (body) => expect(body.installations[1].progress?.succeeded).toBe(1));
  const onB = running.installations[1].rolloutId as string;

  // The ETag moved with each part's state: the one from the creation is stale.
  const stale = await a.t.call('POST', `/api/federation/rollouts/${id}/pause`, {
    token: a.operator,
    headers: { 'if-match': created.headers.get('etag')! },
  });
  expect(stale.status).toBe(412);
  const current = await get(id);
  const paused = await a.t.call('POST', `/api/federation/rollouts/${id}/pause`, {
    token: a.operator,
    headers: { 'if-match': current.headers.get('etag')! },
  });
  expect(paused.status).toBe(200);
  expect(paused.headers.get('etag')).not.toBe(current.headers.get('etag'));
  expect(paused.body.state).toBe('paused');
  // The answer comes once the parts took it: b's part is listed paused already, as b says.
  expect(paused.body.installations[1]).toMatchObject({ rolloutId: onB, state: 'paused' });
  expect((await bRollout(onB)).body.state).toBe('paused');
  expect((await operate(id, 'pause')).status).toBe(409);

  const resumed = await operate(id, 'resume');
  expect(resumed.status).toBe(200);
  expect(resumed.body.state).toBe('running');
  expect(resumed.body.installations[1]).toMatchObject({ rolloutId: onB, state: 'running' });
  expect((await bRollout(onB)).body.state).toBe('running');

  const aborted = await operate(id, 'abort');
  expect(aborted.status).toBe(200);
  expect(aborted.body).toMatchObject({ state: 'aborted', reason: 'aborted by default.operator' });
  expect(aborted.body.installations[1]).toMatchObject({ rolloutId: onB, state: 'aborted' });
  expect((await bRollout(onB)).body.state).toBe('aborted');
  await recordHistories(a.client, federatedRolloutWorkflowId(id), 'federated-rollout-pause-resume-abort');
  expect(fleetB.fleet.agents.filter((agent) => agent.state.lastConfigHash === version.contentHash).length).toBeLessThan(
    3,
  );
  const types = await a.t.database.db('events').where({ subject: id }).pluck('type');
  expect(types).toEqual(
    expect.arrayContaining(['federation.rollout.paused', 'federation.rollout.resumed', 'federation.rollout.aborted']),
  );
  expect((await operate(id, 'resume')).status).toBe(409);
}, 90_000);

/** A policy on b that denies every agent of the group, approved by a second admin; its id. */
async function denyOnB(groupId: string): Promise<string> {
  const policy = await b.t.call('POST', '/api/policies', {
    token: b.admin,
    body: { name: `no-${randomUUID().slice(0, 8)}`, expression: 'false', scope: [groupId] },
  });
  expect(policy.status).toBe(201);
  const secondAdmin = await b.t.pat('admin', { name: `second-admin-${randomUUID().slice(0, 8)}` });
  expect((await b.t.call('POST', `/api/policies/${policy.body.id}/approve`, { token: secondAdmin })).status).toBe(200);
  return policy.body.id as string;
}

test('a policy on b denies: the dry run says which installation refuses and why; creating is 422 naming b, with b’s violations; nothing is created on either side', async () => {
  const [fleetA, fleetB] = await Promise.all([a.fleet(1), b.fleet(1)]);
  const policy = { body: { id: await denyOnB(fleetB.groupId) } };
  const version = await publish();
  const before = await a.t.database.db('federated_rollouts').count({ n: '*' }).first();

  // The dry run alone: each installation's verdict, 200 even when one refuses.
  const dryRun = (body: Record<string, unknown>) =>
    a.t.call('POST', '/api/federation/rollouts/dry-run', { token: a.operator, body });
  const body = {
    configurationId: version.configurationId,
    version: version.version,
    installations: installations(fleetA.groupId, fleetB.groupId),
  };
  const checked = await dryRun(body);
  expect(checked.status).toBe(200);
  expect(checked.body).toEqual({
    allowed: false,
    installations: [
      { installation: 'a', peerId: null, allowed: true, problem: null },
      {
        installation: 'b',
        peerId: bPeerId,
        allowed: false,
        problem: expect.objectContaining({
          type: `${ERRORS}/policy-denied`,
          status: 422,
          detail: expect.stringMatching(/^Installation 'b': Policy '.*' denied the push to agent/),
          installation: 'b',
          peerId: bPeerId,
          policyId: policy.body.id,
          agentId: fleetB.ids[0],
        }),
      },
    ],
  });
  const hereOnly = await dryRun({ ...body, installations: body.installations.slice(0, 1) });
  expect(hereOnly.body).toEqual({
    allowed: true,
    installations: [{ installation: 'a', peerId: null, allowed: true, problem: null }],
  });
  expect((await dryRun({ configurationId: version.configurationId, version: 99, installations: [] })).status).toBe(400);
  const viewer = await a.t.token('default.viewer');
  const asViewer = await a.t.call('POST', '/api/federation/rollouts/dry-run', {
    token: viewer,
    body: { configurationId: version.configurationId, version: version.version, installations: [] },
  });
  expect(asViewer.status).toBe(403); // a dry run of a push is an operator's, as the policies' is

  const denied = await create(body);
  expect(denied.status).toBe(422);
  expect(denied.body).toMatchObject({
    type: `${ERRORS}/policy-denied`,
    detail: expect.stringMatching(/^Installation 'b': Policy '.*' denied the push to agent/),
    installation: 'b',
    peerId: bPeerId,
    policyId: policy.body.id,
    agentId: fleetB.ids[0],
    violations: [expect.objectContaining({ policyId: policy.body.id, agentId: fleetB.ids[0] })],
  });
  expect(await a.t.database.db('federated_rollouts').count({ n: '*' }).first()).toEqual(before);
  expect(await a.t.database.db('rollouts').where({ configuration_id: version.configurationId })).toEqual([]);
  expect(await b.t.database.db('configurations').where({ name: version.name })).toEqual([]);
}, 60_000);

test('parallel: b’s part starts while a’s still runs', async () => {
  const [fleetA, fleetB] = await Promise.all([a.fleet(1), b.fleet(1)]);
  const version = await publish();
  const created = await create({
    configurationId: version.configurationId,
    version: version.version,
    mode: 'parallel',
    installations: [
      { peerId: 'local', target: { groupIds: [fleetA.groupId] }, strategy: { batchSize: 1, bakeSeconds: 10 } },
      { peerId: bPeerId, target: { groupIds: [fleetB.groupId] }, strategy: { batchSize: 1 } },
    ],
  });
  expect(created.status).toBe(201);
  const both = await waitFor(created.body.id, (body) => expect(body.installations[1].state).toBe('completed'));
  expect(both.installations[0].state).toBe('running');
  await waitFor(created.body.id, (body) => expect(body.state).toBe('completed'));
}, 60_000);

test('a policy on b appears after the dry run: b’s part is denied and the federated rollout fails naming b', async () => {
  const [fleetA, fleetB] = await Promise.all([a.fleet(1), b.fleet(1)]);
  const version = await publish();
  const created = await create({
    configurationId: version.configurationId,
    version: version.version,
    installations: [
      { peerId: 'local', target: { groupIds: [fleetA.groupId] }, strategy: { batchSize: 1, bakeSeconds: 6 } },
      { peerId: bPeerId, target: { groupIds: [fleetB.groupId] }, strategy: { batchSize: 1 } },
    ],
  });
  expect(created.status).toBe(201);
  const policy = await denyOnB(fleetB.groupId);

  const failed = await waitFor(created.body.id, (body) => expect(body.state).toBe('failed'));
  expect(failed.reason).toMatch(/^installation 'b' denied the rollout: Policy '.*' denied the push/);
  expect(failed.installations[0].state).toBe('completed');
  expect(failed.installations[1]).toMatchObject({
    state: 'denied',
    rolloutId: null,
    problem: { status: 422, type: `${ERRORS}/policy-denied`, policyId: policy, agentId: fleetB.ids[0] },
  });
  const event = await a.t.database.db('events').where({ subject: created.body.id, type: 'federation.rollout.failed' });
  expect(event).toHaveLength(1);
  expect(await b.t.database.db('rollouts').whereLike('federation_key', `%${created.body.id}%`)).toEqual([]);
}, 60_000);

test('a peer deleted before its part started: the federated rollout fails naming it; its row stays', async () => {
  const credential = await b.t.pat('peer', { name: `peer-a-doomed-${randomUUID().slice(0, 8)}` });
  const peer = await a.t.call('POST', '/api/federation/peers', {
    token: a.admin,
    body: { name: 'b-doomed', baseUrl: b.t.baseUrl, credential },
  });
  expect(peer.status).toBe(201);
  const [fleetA, fleetB] = await Promise.all([a.fleet(1), b.fleet(1)]);
  const version = await publish();
  const created = await create({
    configurationId: version.configurationId,
    version: version.version,
    installations: [
      { peerId: 'local', target: { groupIds: [fleetA.groupId] }, strategy: { batchSize: 1, bakeSeconds: 4 } },
      { peerId: peer.body.id, target: { groupIds: [fleetB.groupId] }, strategy: { batchSize: 1 } },
    ],
  });
  expect(created.status).toBe(201);
  expect((await a.t.call('DELETE', `/api/federation/peers/${peer.body.id}`, { token: a.admin })).status).toBe(204);

  const failed = await waitFor(created.body.id, (body) => expect(body.state).toBe('failed'));
  expect(failed.reason).toBe("installation 'b-doomed': peer 'b-doomed' was deleted; its part cannot be reached");
  expect(failed.installations[1]).toMatchObject({ name: 'b-doomed', local: false, peerId: null, rolloutId: null });
  expect(await b.t.database.db('rollouts').whereLike('federation_key', `%${created.body.id}%`)).toEqual([]);
}, 60_000);

test('validation: draft version, unknown peer, an installation twice, none, a bad strategy; roles', async () => {
  const version = await publish();
  const draft = await a.t.call('POST', `/api/configurations/${version.configurationId}/versions`, {
    token: a.operator,
    body: { content: 'a: 2\n' },
  });
  const one = (peerId: string, strategy: unknown = { batchSize: 1 }) => ({
    peerId,
    target: { groupIds: [randomUUID()] },
    strategy,
  });
  const body = (extra: Record<string, unknown>) => ({
    configurationId: version.configurationId,
    version: version.version,
    installations: [one('local')],
    ...extra,
  });
  const cases: Array<[Record<string, unknown>, number, string]> = [
    // A draft is refused as POST /api/rollouts refuses it: a conflict with the version's state.
    [body({ version: draft.body.version }), 409, ''],
    [body({ installations: [one(randomUUID())] }), 404, ''],
    [body({ installations: [one(bPeerId), one(bPeerId.toUpperCase())] }), 400, 'body.installations.1.peerId'],
    [body({ installations: [one('local'), one('local')] }), 400, 'body.installations.1.peerId'],
    [body({ installations: [] }), 400, 'body.installations'],
    [body({ installations: Array.from({ length: 21 }, () => one(randomUUID())) }), 400, 'body.installations'],
    [body({ installations: [one('local', { batchSize: 0 })] }), 400, 'body.installations.0.strategy.batchSize'],
    [body({ installations: [one('local', { batchSize: 1, batchPercent: 5 })] }), 400, 'body.installations.0.strategy'],
    [body({ mode: 'sideways' }), 400, 'body.mode'],
    [body({ configurationId: randomUUID() }), 404, ''],
  ];
  for (const [sent, status, path] of cases) {
    const res = await create(sent);
    expect({ sent, status: res.status }).toEqual({ sent, status });
    if (path) expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  }
  expect((await create(body({}), await a.t.token('default.viewer'))).status).toBe(403);
  expect((await create(body({}), await a.t.pat('peer'))).status).toBe(403);
  expect((await a.t.call('GET', '/api/federation/rollouts', { token: await a.t.token('default.viewer') })).status).toBe(
    200,
  );
  expect((await operate(randomUUID(), 'pause')).status).toBe(404);
  expect((await get('not-a-uuid')).status).toBe(400);
}, 30_000);

/** A TCP relay to b's api that can stop answering (connections refused) and come back on the same port. */
async function relayTo(target: string) {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = async () => {
    const listening = createServer((client) => {
      const to = connect(Number(upstream.port), upstream.hostname);
      for (const socket of [client, to]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.pipe(to).pipe(client);
    });
    await new Promise<void>((resolve) => listening.listen(port, '127.0.0.1', resolve));
    port = (listening.address() as AddressInfo).port;
    server = listening;
  };
  await listen();
  return {
    url: () => `http://127.0.0.1:${port}`,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server!.close(resolve));
    },
    start: listen,
  };
}

test('b stops answering mid-way: the federated rollout pauses rather than fails; resume goes on', async () => {
  const relay = await relayTo(b.t.baseUrl);
  const credential = await b.t.pat('peer', { name: `peer-a-relayed-${randomUUID().slice(0, 8)}` });
  const peer = await a.t.call('POST', '/api/federation/peers', {
    token: a.admin,
    body: { name: 'b-relayed', baseUrl: relay.url(), credential },
  });
  expect(peer.status).toBe(201);
  const [fleetA, fleetB] = await Promise.all([a.fleet(1), b.fleet(2)]);
  const version = await publish();
  const created = await create({
    configurationId: version.configurationId,
    version: version.version,
    installations: [
      { peerId: 'local', target: { groupIds: [fleetA.groupId] }, strategy: { batchSize: 1 } },
      { peerId: peer.body.id, target: { groupIds: [fleetB.groupId] }, strategy: { batchSize: 1, bakeSeconds: 3 } },
    ],
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  await waitFor(id, (body) => expect(body.installations[1].progress?.succeeded).toBe(1));

  await relay.stop();
  const silent = await create({
    configurationId: version.configurationId,
    version: version.version,
    installations: [{ peerId: peer.body.id, target: { groupIds: [fleetB.groupId] }, strategy: { batchSize: 1 } }],
  });
  expect(silent.status).toBe(503);
  expect(silent.body).toMatchObject({ installation: 'b-relayed', peerId: peer.body.id });
  expect(silent.body.detail).toMatch(/^Peer 'b-relayed' could not be asked/);
  const paused = await waitFor(
    id,
    (body) => {
      expect(body.state).toBe('paused');
      expect(body.installations[1].state).toBe('unreachable');
    },
    75_000,
  );
  expect(paused.reason).toBe("installation 'b-relayed' does not answer; resume to try again");
  expect(paused.installations[1].problem.detail).toMatch(/b-relayed/);
  const event = await a.t.database.db('events').where({ subject: id, type: 'federation.rollout.paused' }).first();
  expect(event.data).toMatchObject({ from: 'running', state: 'paused', actor: 'workflow' });

  await relay.start();
  expect((await operate(id, 'resume')).status).toBe(200);
  await waitFor(id, (body) => expect(body.state).toBe('completed'), 45_000);
  await recordHistories(a.client, federatedRolloutWorkflowId(id), 'federated-rollout-peer-silent');
  for (const agent of fleetB.fleet.agents) expect(agent.state.lastConfigHash).toBe(version.contentHash);
  await relay.stop();
}, 180_000);

test('Temporal not taking the workflow: 503, and the federated rollout ends failed at once (nothing left running undriven)', async () => {
  const t = await startTestApp(); // no Temporal client
  try {
    const operator = await t.token('default.operator');
    const agent = await seedAgent(t.database.db, 'default', { status: 'online' });
    const version = (await publishConfiguration(t, operator, ['receivers: {}\n']))[0]!;
    const res = await t.call('POST', '/api/federation/rollouts', {
      token: operator,
      body: {
        configurationId: version.configurationId,
        version: version.version,
        installations: [{ peerId: 'local', target: { agentIds: [agent.id] }, strategy: { batchSize: 1 } }],
      },
    });
    expect(res.status).toBe(503);
    expect(res.body.type).toBe(`${ERRORS}/unavailable`);
    const [row] = await t.database.db('federated_rollouts');
    expect(row).toMatchObject({ state: 'failed', reason: expect.stringMatching(/could not be started/) });
    const failed = await t.database.db('events').where({ type: 'federation.rollout.failed', subject: row.id });
    // The shape every federated rollout transition has, whoever made it (here: the request that created it).
    expect(failed.map((event) => event.data)).toEqual([
      {
        federatedRolloutId: row.id,
        name: null,
        from: 'running',
        state: 'failed',
        reason: row.reason,
        actor: row.created_by,
      },
    ]);
  } finally {
    await t.close();
  }
});
