import { randomUUID } from 'node:crypto';
import { seedAgent, seedAgents } from '../support/agents-seed';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';

let t: TestApp;
let operator: string;
let viewer: string;
let acme: string;
beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
  viewer = await t.token('default.viewer');
  acme = await t.token('acme.operator');
});
afterAll(() => t?.close());

let n = 0;
const unique = (prefix: string) => `${prefix}-${++n}`;

async function createGroup(name = unique('group'), extra: Record<string, unknown> = {}) {
  const res = await t.call('POST', '/api/groups', { token: operator, body: { name, ...extra } });
  expect(res.status).toBe(201);
  return res;
}

const events = (type: string, subject: string) => t.database.db('events').where({ type, subject });

describe('creating and reading groups', () => {
  test('an operator creates a group; detail has memberCount, deletedAt and a strong ETag', async () => {
    const res = await createGroup('web', { description: 'web servers', labels: { env: 'prod' } });
    expect(res.headers.get('location')).toBe(`/api/groups/${res.body.id}`);
    // The row version, and a digest of the body: its member count moves without the version.
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{8}\.[\w-]{16}"$/);
    expect(res.body).toMatchObject({
      name: 'web',
      description: 'web servers',
      labels: { env: 'prod' },
      memberCount: 0,
      deletedAt: null,
    });

    const detail = await t.call('GET', `/api/groups/${res.body.id}`, { token: viewer });
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual(res.body);
    expect(detail.headers.get('etag')).toBe(res.headers.get('etag'));
    const again = await t.call('GET', `/api/groups/${res.body.id}`, {
      token: viewer,
      headers: { 'if-none-match': detail.headers.get('etag')! },
    });
    expect(again.status).toBe(304);

    expect(await events('group.created', res.body.id)).toHaveLength(1);
    const write = await t.database
      .db('audit_calls')
      .where({ resource_type: 'group', resource_id: res.body.id, method: 'POST' });
    expect(write).toHaveLength(1);
    await eventually(async () => {
      const read = await t.database
        .db('audit_calls')
        .where({ resource_type: 'group', resource_id: res.body.id, method: 'GET' });
      expect(read.length).toBeGreaterThanOrEqual(1);
    });
  });

  test('an agent that enrolls into a group moves its ETag: a copy read before is not answered 304; a write on it still acts', async () => {
    const group = await createGroup();
    const before = group.headers.get('etag')!;
    const conditional = () =>
      t.call('GET', `/api/groups/${group.body.id}`, { token: viewer, headers: { 'if-none-match': before } });
    expect((await conditional()).status).toBe(304);

    // Enrolment puts the agent in the group; it is no operator's change of the group.
    await seedAgent(t.database.db, 'default', { group_id: group.body.id });
    const after = await conditional();
    expect(after.status).toBe(200);
    expect(after.body.memberCount).toBe(1);
    expect(after.headers.get('etag')!.split('.')[0]).toBe(before.split('.')[0]);

    const edited = await t.call('PUT', `/api/groups/${group.body.id}`, {
      token: operator,
      headers: { 'if-match': before },
      body: { name: group.body.name, description: 'edited on the copy read before' },
    });
    expect(edited.status).toBe(200);
    const again = await t.call('PUT', `/api/groups/${group.body.id}`, {
      token: operator,
      headers: { 'if-match': before },
      body: { name: group.body.name },
    });
    expect(again.status).toBe(412);
    // The digest is not compared, but a tag must still be one of ours to match.
    const [version] = edited.headers.get('etag')!.split('.');
    const foreign = await t.call('PUT', `/api/groups/${group.body.id}`, {
      token: operator,
      headers: { 'if-match': `${version}.short"` },
      body: { name: group.body.name },
    });
    expect(foreign.status).toBe(412);
  });

  test('every tenant has a default group, created on first need', async () => {
    const list = await t.call('GET', '/api/groups?q=default', { token: viewer });
    expect(list.status).toBe(200);
    expect(list.body.items.map((g: { name: string }) => g.name)).toEqual(['default']);
    const dup = await t.call('POST', '/api/groups', { token: operator, body: { name: 'default' } });
    expect(dup.status).toBe(409);
  });

  test('names are unique among live groups of a tenant; another tenant may reuse one', async () => {
    await createGroup('unique-name');
    const dup = await t.call('POST', '/api/groups', { token: operator, body: { name: 'unique-name' } });
    expect(dup.status).toBe(409);
    expect(dup.body.type).toBe('http://fleet.test/errors/conflict');
    expect(dup.body.detail).toMatch(/unique-name/);
    const elsewhere = await t.call('POST', '/api/groups', { token: acme, body: { name: 'unique-name' } });
    expect(elsewhere.status).toBe(201);
  });

  test.each([
    [{}, 'body.name'],
    [{ name: '' }, 'body.name'],
    [{ name: '   ' }, 'body.name'],
    [{ name: 'x'.repeat(101) }, 'body.name'],
    [{ name: 'ok', description: 5 }, 'body.description'],
    [{ name: 'ok', labels: { 'bad key!': 'v' } }, 'body.labels.bad key!'],
    [{ name: 'ok', labels: { env: 5 } }, 'body.labels.env'],
    [{ name: 'ok', extra: true }, 'body'],
  ])('invalid create %j is 400 naming %s', async (body, path) => {
    const res = await t.call('POST', '/api/groups', { token: operator, body });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('http://fleet.test/errors/validation-failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test.each([
    ['/api/groups/not-a-uuid', 'path.id'],
    ['/api/groups?limit=0', 'query.limit'],
    ['/api/groups?limit=1001', 'query.limit'],
    ['/api/groups?includeDeleted=yes', 'query.includeDeleted'],
    ['/api/groups?label=nocolon', 'query.label'],
    ['/api/groups?cursor=garbage', 'query.cursor'],
    ['/api/groups?unknown=1', 'query'],
  ])('invalid read %s is 400 naming %s', async (path, field) => {
    const res = await t.call('GET', path, { token: viewer });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(field);
  });

  test('an unknown group is 404', async () => {
    const res = await t.call('GET', `/api/groups/${randomUUID()}`, { token: viewer });
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('http://fleet.test/errors/not-found');
  });
});

describe('roles', () => {
  test('a viewer reads but cannot change anything; a PAT viewer neither', async () => {
    const group = (await createGroup()).body;
    const agent = await seedAgent(t.database.db, 'default');
    const pat = await t.pat('viewer');
    for (const token of [viewer, pat]) {
      expect((await t.call('GET', '/api/groups', { token })).status).toBe(200);
      expect((await t.call('GET', `/api/groups/${group.id}`, { token })).status).toBe(200);
      expect((await t.call('GET', `/api/groups/${group.id}/members`, { token })).status).toBe(200);
      const attempts = [
        t.call('POST', '/api/groups', { token, body: { name: unique('nope') } }),
        t.call('PUT', `/api/groups/${group.id}`, { token, body: { name: 'renamed' } }),
        t.call('DELETE', `/api/groups/${group.id}`, { token }),
        t.call('POST', `/api/groups/${group.id}/restore`, { token }),
        t.call('POST', `/api/groups/${group.id}/members`, { token, body: { agentId: agent.id } }),
      ];
      for (const res of await Promise.all(attempts)) {
        expect(res.status).toBe(403);
        expect(res.body.type).toBe('http://fleet.test/errors/forbidden');
      }
    }
    const operatorPat = await t.pat('operator');
    expect((await t.call('POST', '/api/groups', { token: operatorPat, body: { name: unique('by-pat') } })).status).toBe(
      201,
    );
  });

  test('no token is 401', async () => {
    expect((await t.call('GET', '/api/groups')).status).toBe(401);
  });
});

describe('tenant isolation', () => {
  test("acme cannot see, change, delete, restore or add to default's groups", async () => {
    const group = (await createGroup()).body;
    const agent = await seedAgent(t.database.db, 'default');
    const acmeAgent = await seedAgent(t.database.db, 'acme');
    const calls = await Promise.all([
      t.call('GET', `/api/groups/${group.id}`, { token: acme }),
      t.call('GET', `/api/groups/${group.id}/members`, { token: acme }),
      t.call('PUT', `/api/groups/${group.id}`, { token: acme, body: { name: 'stolen' } }),
      t.call('DELETE', `/api/groups/${group.id}`, { token: acme }),
      t.call('POST', `/api/groups/${group.id}/restore`, { token: acme }),
      t.call('POST', `/api/groups/${group.id}/members`, { token: acme, body: { agentId: acmeAgent.id } }),
    ]);
    expect(calls.map((r) => r.status)).toEqual([404, 404, 404, 404, 404, 404]);
    const list = await t.call('GET', '/api/groups?limit=1000&includeDeleted=true', { token: acme });
    expect(list.body.items.map((g: { id: string }) => g.id)).not.toContain(group.id);
    // acme's group cannot take default's agent either
    const acmeGroup = (await t.call('POST', '/api/groups', { token: acme, body: { name: unique('acme') } })).body;
    const take = await t.call('POST', `/api/groups/${acmeGroup.id}/members`, {
      token: acme,
      body: { agentId: agent.id },
    });
    expect(take.status).toBe(404);
    expect(take.body.detail).toContain(agent.id);
    expect((await t.call('GET', `/api/agents/${agent.id}`, { token: operator })).body.groupId).toBe(agent.group_id);
  });
});

describe('renaming with If-Match', () => {
  test('PUT with the current ETag succeeds and returns a new one; the old one is 412', async () => {
    const created = await createGroup(unique('before'));
    const etag = created.headers.get('etag')!;
    const put = await t.call('PUT', `/api/groups/${created.body.id}`, {
      token: operator,
      body: { name: unique('after'), description: 'renamed', labels: { tier: 'gold' } },
      headers: { 'if-match': etag },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ description: 'renamed', labels: { tier: 'gold' } });
    expect(put.headers.get('etag')).not.toBe(etag);

    const stale = await t.call('PUT', `/api/groups/${created.body.id}`, {
      token: operator,
      body: { name: 'lost' },
      headers: { 'if-match': etag },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toBe('http://fleet.test/errors/precondition-failed');
    expect((await t.call('GET', `/api/groups/${created.body.id}`, { token: viewer })).body.name).toBe(put.body.name);
    expect(await events('group.updated', created.body.id)).toHaveLength(1);
  });

  test('10 concurrent renames with the same ETag: one wins, nine get 412', async () => {
    const created = await createGroup();
    const etag = created.headers.get('etag')!;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.call('PUT', `/api/groups/${created.body.id}`, {
          token: operator,
          body: { name: unique(`race-${i}`) },
          headers: { 'if-match': etag },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 412)).toHaveLength(9);
  });

  test('renaming onto a live name is 409; the default group keeps its name', async () => {
    const a = await createGroup();
    const b = await createGroup();
    const clash = await t.call('PUT', `/api/groups/${b.body.id}`, { token: operator, body: { name: a.body.name } });
    expect(clash.status).toBe(409);
    const list = await t.call('GET', '/api/groups?q=default', { token: viewer });
    const rename = await t.call('PUT', `/api/groups/${list.body.items[0].id}`, {
      token: operator,
      body: { name: 'not-default' },
    });
    expect(rename.status).toBe(409);
  });

  test('an unknown group is 404, a deleted one 409', async () => {
    expect((await t.call('PUT', `/api/groups/${randomUUID()}`, { token: operator, body: { name: 'x' } })).status).toBe(
      404,
    );
    const g = await createGroup();
    expect((await t.call('DELETE', `/api/groups/${g.body.id}`, { token: operator })).status).toBe(204);
    expect(
      (await t.call('PUT', `/api/groups/${g.body.id}`, { token: operator, body: { name: unique('x') } })).status,
    ).toBe(409);
  });
});

describe('soft delete and restore', () => {
  test('a group with members cannot be deleted; once empty it can, with If-Match', async () => {
    const group = await createGroup();
    const agent = await seedAgent(t.database.db, 'default', { group_id: group.body.id });
    const busy = await t.call('DELETE', `/api/groups/${group.body.id}`, { token: operator });
    expect(busy.status).toBe(409);
    expect(busy.body.type).toBe('http://fleet.test/errors/conflict');
    expect(busy.body.detail).toMatch(/still has agents/);

    const defaultGroup = (await t.call('GET', '/api/groups?q=default', { token: viewer })).body.items[0];
    expect(
      (await t.call('POST', `/api/agents/${agent.id}/move`, { token: operator, body: { groupId: defaultGroup.id } }))
        .status,
    ).toBe(200);

    const current = await t.call('GET', `/api/groups/${group.body.id}`, { token: viewer });
    expect(current.body.memberCount).toBe(0);
    const stale = await t.call('DELETE', `/api/groups/${group.body.id}`, {
      token: operator,
      headers: { 'if-match': group.headers.get('etag')! },
    });
    expect(stale.status).toBe(412); // the move changed its memberCount, so its ETag
    const deleted = await t.call('DELETE', `/api/groups/${group.body.id}`, {
      token: operator,
      headers: { 'if-match': current.headers.get('etag')! },
    });
    expect(deleted.status).toBe(204);
    expect(deleted.headers.get('etag')).toMatch(/^"[0-9a-f]{8}"$/); // no body, no digest
    expect(await events('group.deleted', group.body.id)).toHaveLength(1);

    const detail = await t.call('GET', `/api/groups/${group.body.id}`, { token: viewer });
    expect(detail.body.deletedAt).not.toBeNull();
    const live = await t.call('GET', '/api/groups?limit=1000', { token: viewer });
    expect(live.body.items.map((g: { id: string }) => g.id)).not.toContain(group.body.id);
    const all = await t.call('GET', '/api/groups?limit=1000&includeDeleted=true', { token: viewer });
    expect(all.body.items.map((g: { id: string }) => g.id)).toContain(group.body.id);

    expect((await t.call('DELETE', `/api/groups/${group.body.id}`, { token: operator })).status).toBe(409);
  });

  test('the default group cannot be deleted', async () => {
    const defaultGroup = (await t.call('GET', '/api/groups?q=default', { token: viewer })).body.items[0];
    expect((await t.call('DELETE', `/api/groups/${defaultGroup.id}`, { token: operator })).status).toBe(409);
  });

  test("a deleted group's name is free again; restoring it then is 409 until the name is free", async () => {
    const name = unique('phoenix');
    const first = await createGroup(name);
    expect((await t.call('DELETE', `/api/groups/${first.body.id}`, { token: operator })).status).toBe(204);
    const second = await createGroup(name);

    const blocked = await t.call('POST', `/api/groups/${first.body.id}/restore`, { token: operator });
    expect(blocked.status).toBe(409);
    expect(blocked.body.detail).toContain(name);

    expect(
      (await t.call('PUT', `/api/groups/${second.body.id}`, { token: operator, body: { name: unique('other') } }))
        .status,
    ).toBe(200);
    const etag = (await t.call('GET', `/api/groups/${first.body.id}`, { token: viewer })).headers.get('etag')!;
    expect(
      (
        await t.call('POST', `/api/groups/${first.body.id}/restore`, {
          token: operator,
          headers: { 'if-match': '"00000000"' },
        })
      ).status,
    ).toBe(412);
    const restored = await t.call('POST', `/api/groups/${first.body.id}/restore`, {
      token: operator,
      headers: { 'if-match': etag },
    });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ name, deletedAt: null });
    expect(await events('group.restored', first.body.id)).toHaveLength(1);
    expect((await t.call('POST', `/api/groups/${first.body.id}/restore`, { token: operator })).status).toBe(409);
  });
});

describe('members', () => {
  test('adding a member moves the agent in; the list of members pages through them', async () => {
    const from = await createGroup();
    const to = await createGroup();
    const ids = await seedAgents(t.database.db, 'default', 7, () => ({ group_id: from.body.id }));
    const added = await t.call('POST', `/api/groups/${to.body.id}/members`, {
      token: operator,
      body: { agentId: ids[0] },
    });
    expect(added.status).toBe(200);
    expect(added.body.memberCount).toBe(1);
    expect(added.headers.get('etag')).not.toBe(to.headers.get('etag'));
    const moved = await events('agent.moved', ids[0]!);
    expect(moved).toHaveLength(1);
    expect(moved[0].data).toEqual({ agentId: ids[0], fromGroupId: from.body.id, toGroupId: to.body.id });

    const members = await t.call('GET', `/api/groups/${to.body.id}/members`, { token: viewer });
    expect(members.body.items.map((a: { id: string }) => a.id)).toEqual([ids[0]]);

    const seen: string[] = [];
    let next: string | null = `/api/groups/${from.body.id}/members?limit=2`;
    while (next) {
      const page: Awaited<ReturnType<TestApp['call']>> = await t.call('GET', next, { token: viewer });
      expect(page.headers.get('x-total-count')).toBe('6');
      seen.push(...page.body.items.map((a: { id: string }) => a.id));
      next = page.body.nextCursor ? `/api/groups/${from.body.id}/members?limit=2&cursor=${page.body.nextCursor}` : null;
    }
    expect(seen).toEqual(ids.slice(1).sort());

    // adding it again changes nothing
    const again = await t.call('POST', `/api/groups/${to.body.id}/members`, {
      token: operator,
      body: { agentId: ids[0] },
    });
    expect(again.status).toBe(200);
    expect(await events('agent.moved', ids[0]!)).toHaveLength(1);
  });

  test('an unknown agent is 404; a deleted group 409; a bad body 400; a stale If-Match 412', async () => {
    const group = await createGroup();
    const agent = await seedAgent(t.database.db, 'default');
    const unknown = await t.call('POST', `/api/groups/${group.body.id}/members`, {
      token: operator,
      body: { agentId: randomUUID() },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toMatch(/No agent/);
    for (const [body, path] of [
      [{}, 'body.agentId'],
      [{ agentId: 'x' }, 'body.agentId'],
    ] as const) {
      const bad = await t.call('POST', `/api/groups/${group.body.id}/members`, { token: operator, body });
      expect(bad.status).toBe(400);
      expect(bad.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const stale = await t.call('POST', `/api/groups/${group.body.id}/members`, {
      token: operator,
      body: { agentId: agent.id },
      headers: { 'if-match': '"00000000"' },
    });
    expect(stale.status).toBe(412);
    expect((await t.call('DELETE', `/api/groups/${group.body.id}`, { token: operator })).status).toBe(204);
    const into = await t.call('POST', `/api/groups/${group.body.id}/members`, {
      token: operator,
      body: { agentId: agent.id },
    });
    expect(into.status).toBe(409);
    expect(into.body.detail).toMatch(/deleted/);
  });

  test('a move racing a delete never leaves an agent in a deleted group', async () => {
    for (let round = 0; round < 10; round++) {
      const group = await createGroup();
      const agent = await seedAgent(t.database.db, 'default');
      const [move, del] = await Promise.all([
        t.call('POST', `/api/agents/${agent.id}/move`, { token: operator, body: { groupId: group.body.id } }),
        t.call('DELETE', `/api/groups/${group.body.id}`, { token: operator }),
      ]);
      // either the move wins (and the delete sees a member) or the delete does (and the move sees it deleted)
      expect([`${move.status}/${del.status}`]).toEqual([expect.stringMatching(/^(200\/409|409\/204)$/)]);
      const row = await t.database.db('agents').where({ id: agent.id }).first();
      expect(row.group_id === group.body.id).toBe(move.status === 200);
    }
  });
});

describe('listing groups', () => {
  test('filters by name substring and label, across pages, with X-Total-Count', async () => {
    for (let i = 0; i < 25; i++) {
      await createGroup(`fleet-${i}`, { labels: { parity: i % 2 === 0 ? 'even' : 'odd', kind: 'fleet' } });
    }
    const seen: string[] = [];
    let next: string | null = '/api/groups?q=FLEET-&label=parity:even&label=kind:fleet&limit=4';
    while (next) {
      const res = await t.call('GET', next, { token: viewer });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-total-count')).toBe('13');
      seen.push(...res.body.items.map((g: { name: string }) => g.name));
      const link = res.headers.get('link');
      next = link
        ? new URL(/^<([^>]+)>/.exec(link)![1]!).pathname + new URL(/^<([^>]+)>/.exec(link)![1]!).search
        : null;
    }
    expect(seen).toEqual(Array.from({ length: 13 }, (_, i) => `fleet-${i * 2}`));
    const wildcard = await t.call('GET', '/api/groups?q=%25', { token: viewer });
    expect(wildcard.body.items).toEqual([]);
  });
});
