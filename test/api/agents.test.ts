import { randomUUID } from 'node:crypto';
import { seedAgent, seedAgents } from '../support/agents-seed';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let operator: string;
let viewer: string;
beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
  viewer = await t.token('default.viewer');
});
afterAll(() => t?.close());

async function newGroup(token = operator, name = `g-${randomUUID().slice(0, 8)}`) {
  const res = await t.call('POST', '/api/groups', { token, body: { name } });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
}

/** Follows `Link: rel="next"` from `first`; returns every item's id, the page count and each page's X-Total-Count. */
async function walk(first: string, token: string) {
  const ids: string[] = [];
  const totals = new Set<string | null>();
  let next: string | null = first;
  let pages = 0;
  while (next) {
    const res = await t.call('GET', next, { token });
    expect(res.status).toBe(200);
    totals.add(res.headers.get('x-total-count'));
    ids.push(...res.body.items.map((a: { id: string }) => a.id));
    const link = res.headers.get('link');
    const url = link ? new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!) : null;
    next = url ? url.pathname + url.search : null;
    pages++;
  }
  return { ids, pages, totals: [...totals] };
}

describe('agent detail', () => {
  test('shows every field of the agent detail: identity, labels, status, capabilities, desired and applied configuration, certificate', async () => {
    const configurationId = randomUUID();
    const agent = await seedAgent(t.database.db, 'default', {
      name: 'collector-1',
      labels: { env: 'prod', region: 'eu' },
      status: 'online',
      last_seen_at: new Date('2026-11-22T10:00:00Z'),
      description: { identifying: { 'service.name': 'otelcol' } },
      capabilities: 0x1fff,
      desired_configuration_id: configurationId,
      desired_version: 3,
      desired_hash: 'abc',
      applied_configuration_id: configurationId,
      applied_version: 2,
      applied_hash: 'def',
      applied_status: 'FAILED',
      applied_error: 'bad yaml',
      certificate_serial: '01ff',
      certificate_not_after: new Date('2027-11-22T00:00:00Z'),
    });
    const res = await t.call('GET', `/api/agents/${agent.id}`, { token: viewer });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBeNull();
    expect(res.body).toEqual({
      id: agent.id,
      name: 'collector-1',
      groupId: agent.group_id,
      labels: { env: 'prod', region: 'eu' },
      status: 'online',
      lastSeenAt: '2026-11-22T10:00:00.000Z',
      description: { identifying: { 'service.name': 'otelcol' } },
      capabilities: 0x1fff,
      capabilityNames: [
        'ReportsStatus',
        'AcceptsRemoteConfig',
        'ReportsEffectiveConfig',
        'AcceptsPackages',
        'ReportsPackageStatuses',
        'ReportsOwnTraces',
        'ReportsOwnMetrics',
        'ReportsOwnLogs',
        'AcceptsOpAMPConnectionSettings',
        'AcceptsOtherConnectionSettings',
        'AcceptsRestartCommand',
        'ReportsHealth',
        'ReportsRemoteConfig',
      ],
      desired: { configurationId, version: 3, hash: 'abc' },
      applied: { configurationId, version: 2, hash: 'def', status: 'FAILED', error: 'bad yaml' },
      certificate: { serial: '01ff', notAfter: '2027-11-22T00:00:00.000Z', revokedAt: null },
      health: null,
      effectiveConfigHash: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  test('capabilities by name, bits the specification does not name left out; the mask as it is', async () => {
    const agent = await seedAgent(t.database.db, 'default', { capabilities: 0x2000 | 0x8000 | 0x10000 });
    const res = await t.call('GET', `/api/agents/${agent.id}`, { token: viewer });
    expect(res.body).toMatchObject({
      capabilities: 0x2000 | 0x8000 | 0x10000,
      capabilityNames: ['ReportsHeartbeat', 'ReportsConnectionSettingsStatus'],
    });
  });

  test('a new agent has no desired, applied or certificate yet', async () => {
    const agent = await seedAgent(t.database.db, 'default');
    const res = await t.call('GET', `/api/agents/${agent.id}`, { token: viewer });
    expect(res.body).toMatchObject({
      status: 'enrolling',
      desired: null,
      applied: null,
      certificate: null,
      lastSeenAt: null,
    });
  });

  test('unknown is 404, a malformed id 400', async () => {
    expect((await t.call('GET', `/api/agents/${randomUUID()}`, { token: viewer })).status).toBe(404);
    const bad = await t.call('GET', '/api/agents/nope', { token: viewer });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { path: string }) => e.path)).toEqual(['path.id']);
  });
});

describe('moving agents', () => {
  test('an operator moves an agent; the event records both groups; both groups count it', async () => {
    const agent = await seedAgent(t.database.db, 'default');
    const target = await newGroup();
    const res = await t.call('POST', `/api/agents/${agent.id}/move`, { token: operator, body: { groupId: target.id } });
    expect(res.status).toBe(200);
    expect(res.body.groupId).toBe(target.id);
    expect((await t.call('GET', `/api/agents/${agent.id}`, { token: viewer })).body.groupId).toBe(target.id);
    expect((await t.call('GET', `/api/groups/${target.id}`, { token: viewer })).body.memberCount).toBe(1);
    const event = await t.database.db('events').where({ type: 'agent.moved', subject: agent.id }).first();
    expect(event).toMatchObject({
      tenant_id: 'default',
      source: '/api/agents',
      data: { agentId: agent.id, fromGroupId: agent.group_id, toGroupId: target.id },
    });
    const audit = await t.database
      .db('audit_calls')
      .where({ resource_type: 'agent', resource_id: agent.id, method: 'POST' });
    expect(audit).toHaveLength(1);
  });

  test('into a soft-deleted group is 409 with a clear detail; into an unknown group 404 naming it', async () => {
    const agent = await seedAgent(t.database.db, 'default');
    const gone = await newGroup();
    expect((await t.call('DELETE', `/api/groups/${gone.id}`, { token: operator })).status).toBe(204);
    const deleted = await t.call('POST', `/api/agents/${agent.id}/move`, {
      token: operator,
      body: { groupId: gone.id },
    });
    expect(deleted.status).toBe(409);
    expect(deleted.body.type).toBe('http://fleet.test/errors/conflict');
    expect(deleted.body.detail).toBe(
      `Group '${gone.name}' (${gone.id}) is deleted; restore it before moving agents into it.`,
    );

    const groupId = randomUUID();
    const unknown = await t.call('POST', `/api/agents/${agent.id}/move`, { token: operator, body: { groupId } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toBe(`No group with id '${groupId}'.`);
    expect((await t.call('GET', `/api/agents/${agent.id}`, { token: viewer })).body.groupId).toBe(agent.group_id);
    expect(await t.database.db('events').where({ type: 'agent.moved', subject: agent.id })).toHaveLength(0);
  });

  test('an unknown agent is 404; bad bodies are 400 naming the field', async () => {
    const target = await newGroup();
    const unknown = await t.call('POST', `/api/agents/${randomUUID()}/move`, {
      token: operator,
      body: { groupId: target.id },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toMatch(/^No agent/);
    const agent = await seedAgent(t.database.db, 'default');
    for (const [body, path] of [
      [{}, 'body.groupId'],
      [{ groupId: 'default' }, 'body.groupId'],
      [{ groupId: target.id, x: 1 }, 'body'],
    ] as const) {
      const res = await t.call('POST', `/api/agents/${agent.id}/move`, { token: operator, body });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const noBody = await t.call('POST', `/api/agents/${agent.id}/move`, { token: operator });
    expect(noBody.status).toBe(400);
  });

  test('a viewer reads but may not move (403); an operator PAT may', async () => {
    const agent = await seedAgent(t.database.db, 'default');
    const target = await newGroup();
    expect((await t.call('GET', '/api/agents', { token: viewer })).status).toBe(200);
    for (const token of [viewer, await t.pat('viewer'), await t.token('default.auditor')]) {
      const res = await t.call('POST', `/api/agents/${agent.id}/move`, { token, body: { groupId: target.id } });
      expect(res.status).toBe(403);
    }
    const pat = await t.pat('operator');
    expect(
      (await t.call('POST', `/api/agents/${agent.id}/move`, { token: pat, body: { groupId: target.id } })).status,
    ).toBe(200);
  });
});

describe('tenant isolation', () => {
  test("acme cannot see or move default's agents, nor move its own into default's groups", async () => {
    const acmeOperator = await t.token('acme.operator');
    const acmeViewer = await t.token('acme.viewer');
    const mine = await seedAgent(t.database.db, 'default', { labels: { owner: 'default-only' } });
    const theirs = await seedAgent(t.database.db, 'acme');
    const acmeGroup = await newGroup(acmeOperator);
    const defaultGroup = await newGroup();

    expect((await t.call('GET', `/api/agents/${mine.id}`, { token: acmeViewer })).status).toBe(404);
    const list = await t.call('GET', '/api/agents?label=owner:default-only', { token: acmeViewer });
    expect(list.body.items).toEqual([]);
    expect(list.headers.get('x-total-count')).toBe('0');
    expect((await t.call('GET', `/api/agents?q=${mine.id.slice(0, 8)}`, { token: acmeViewer })).body.items).toEqual([]);
    expect((await t.call('GET', `/api/agents?groupId=${mine.group_id}`, { token: acmeViewer })).body.items).toEqual([]);

    const steal = await t.call('POST', `/api/agents/${mine.id}/move`, {
      token: acmeOperator,
      body: { groupId: acmeGroup.id },
    });
    expect(steal.status).toBe(404);
    const push = await t.call('POST', `/api/agents/${theirs.id}/move`, {
      token: acmeOperator,
      body: { groupId: defaultGroup.id },
    });
    expect(push.status).toBe(404);
    const pull = await t.call('POST', `/api/agents/${mine.id}/move`, {
      token: operator,
      body: { groupId: acmeGroup.id },
    });
    expect(pull.status).toBe(404);
    expect((await t.call('GET', `/api/agents/${mine.id}`, { token: viewer })).body.groupId).toBe(mine.group_id);
  });
});

describe('listing agents', () => {
  const TENANT = 'fleet3k';
  const COUNT = 3000;
  const envs = ['prod', 'staging', 'dev'];
  const statuses = ['online', 'offline', 'enrolling', 'revoked'] as const;
  const configurationId = randomUUID();
  let token: string;
  let ids: string[];
  let groupId: string;

  beforeAll(async () => {
    token = await t.pat('viewer', { tenant: TENANT, name: 'lister' });
    const admin = await t.pat('operator', { tenant: TENANT, name: 'grouper' });
    groupId = (await newGroup(admin, 'canary')).id;
    ids = await seedAgents(t.database.db, TENANT, COUNT, (i) => ({
      name: i % 100 === 0 ? `edge-special-${i}` : `node-${i}`,
      labels: { env: envs[i % 3]!, region: i % 2 === 0 ? 'eu' : 'us' },
      status: statuses[i % 4],
      ...(i % 10 === 0 ? { group_id: groupId } : {}),
      ...(i % 5 === 0 ? { desired_configuration_id: configurationId, desired_version: (i % 3) + 1 } : {}),
    }));
  });

  const expected = (keep: (i: number) => boolean) => ids.filter((_, i) => keep(i)).sort();

  test('cursor pages over all agents: no duplicates, no gaps, right X-Total-Count', async () => {
    const { ids: seen, pages, totals } = await walk('/api/agents?limit=1000', token);
    expect(totals).toEqual([String(COUNT)]);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].sort());
  });

  test.each([
    ['label=env:prod', (i: number) => i % 3 === 0],
    ['label=env:prod&label=region:eu', (i: number) => i % 6 === 0],
    ['status=online', (i: number) => i % 4 === 0],
    ['status=offline&label=region:us', (i: number) => i % 4 === 1],
    ['groupId=GROUP', (i: number) => i % 10 === 0],
    ['configurationId=CONF', (i: number) => i % 5 === 0],
    ['configurationId=CONF&version=2', (i: number) => i % 5 === 0 && i % 3 === 1],
    ['q=SPECIAL', (i: number) => i % 100 === 0],
  ])('filter %s holds on every page and in the count', async (filter, keep) => {
    const query = filter.replace('GROUP', groupId).replace('CONF', configurationId);
    const want = expected(keep);
    const { ids: seen, totals, pages } = await walk(`/api/agents?${query}&limit=97`, token);
    expect(totals).toEqual([String(want.length)]);
    expect(seen).toEqual(want);
    expect(pages).toBe(Math.max(1, Math.ceil(want.length / 97)));
  });

  test('sorted by name either way, cursor pages walk the whole list in that order', async () => {
    const names = new Map(ids.map((id, i) => [id, i % 100 === 0 ? `edge-special-${i}` : `node-${i}`]));
    const byName = (a: string, b: string) =>
      names.get(a)! < names.get(b)! ? -1 : names.get(a)! > names.get(b)! ? 1 : a < b ? -1 : 1;
    const staging = expected((i) => i % 3 === 1);
    const ascending = await walk('/api/agents?label=env:staging&sort=name&limit=97', token);
    // Postgres orders names by the database's collation: here plain byte order ("C").
    expect(ascending.ids).toEqual([...staging].sort(byName));
    const descending = await walk('/api/agents?label=env:staging&sort=-name&limit=97', token);
    expect(descending.ids).toEqual([...staging].sort(byName).reverse());
    // A cursor of one order is refused by another that reads it otherwise.
    const first = await t.call('GET', '/api/agents?label=env:staging&limit=10', { token });
    const cursor = new URL(/^<([^>]+)>/.exec(first.headers.get('link')!)![1]!).searchParams.get('cursor');
    const mixed = await t.call('GET', `/api/agents?sort=name&cursor=${cursor}`, { token });
    expect(mixed.status).toBe(400);
    expect((await t.call('GET', '/api/agents?sort=lastSeenAt', { token })).status).toBe(400);
  });

  test('q matches an id prefix', async () => {
    const target = ids[1234]!;
    const res = await t.call('GET', `/api/agents?q=${target.slice(0, 13)}`, { token });
    expect(res.body.items.map((a: { id: string }) => a.id)).toEqual([target]);
    expect(
      (await t.call('GET', `/api/agents?q=${target.slice(0, 13).toUpperCase()}`, { token })).body.items,
    ).toHaveLength(1);
    expect((await t.call('GET', '/api/agents?q=%25', { token })).body.items).toEqual([]);
  });

  test('offset pages agree with cursor pages', async () => {
    const { ids: seen, totals } = await walk('/api/agents?label=env:staging&limit=250&offset=0', token);
    expect(totals).toEqual(['1000']);
    expect(seen).toEqual(expected((i) => i % 3 === 1));
  });

  test('the members of a group are its agents', async () => {
    const { ids: seen, totals } = await walk(`/api/groups/${groupId}/members?limit=100`, token);
    expect(totals).toEqual(['300']);
    expect(seen).toEqual(expected((i) => i % 10 === 0));
  });

  test.each([
    ['status=sleeping', 'query.status'],
    ['groupId=nope', 'query.groupId'],
    ['label=env', 'query.label'],
    ['label=env:prod&label=env:dev', 'query.label'],
    ['version=2', 'query.version'],
    ['configurationId=x', 'query.configurationId'],
    [`configurationId=${randomUUID()}&version=two`, 'query.version'],
    ['limit=1001', 'query.limit'],
    ['cursor=bm9wZQ', 'query.cursor'],
    ['offset=5&cursor=WyIwMDAwMDAwMC0wMDAwLTAwMDAtMDAwMC0wMDAwMDAwMDAwMDAiXQ', 'query'],
    ['colour=red', 'query'],
  ])('invalid filter %s is 400 naming %s', async (query, path) => {
    const res = await t.call('GET', `/api/agents?${query}`, { token });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('http://fleet.test/errors/validation-failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test('the label filter uses the GIN index', async () => {
    const db = t.database.db;
    await db.raw('ANALYZE agents');
    const plan = await db.transaction(async (trx) => {
      await trx.raw('SET LOCAL enable_seqscan = off');
      await trx.raw('SET LOCAL enable_indexscan = off'); // leave the planner only the bitmap paths
      const rows = await trx.raw(
        `EXPLAIN ${db('agents').where({ tenant_id: TENANT }).whereRaw('labels @> ?::jsonb', ['{"env":"prod"}']).count().toQuery()}`,
      );
      return rows.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('agents_labels');
  });
});
