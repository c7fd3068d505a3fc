import { createHash, randomUUID } from 'node:crypto';
import { assertPolicies, evaluatePolicies } from '../../domain/policies/evaluate';
import pino from 'pino';
import { createProblemRenderer } from '../../api/middleware/problems';
import { problemOf } from '../../api/problems';
import { NotFoundError, PolicyDeniedError } from '../../domain/errors';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let admin: string; // default.admin
let secondAdmin: string; // PAT named 'second-admin'
let operator: string; // default.operator
let viewer: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('default.admin');
  operator = await t.token('default.operator');
  viewer = await t.token('default.viewer');
  secondAdmin = await t.pat('admin', { name: 'second-admin' });
});
afterAll(() => t?.close());

const PROBLEMS = 'http://fleet.test/errors';
const draft = (
  name: string,
  expression = 'agent.labels.env != "prod" || rollout.batchPercent <= 10',
  extra: Record<string, unknown> = {},
) => ({
  name,
  description: `policy ${name}`,
  expression,
  ...extra,
});

/** A PAT as if issued by `issuer` (t.pat records 'test'; two PATs of one issuer act for the same person). */
async function patIssuedBy(issuer: string, role: 'operator' | 'admin', tenant: string, name: string) {
  const token = await t.pat(role, { tenant, name });
  await t.database.db('pats').where({ tenant_id: tenant, name }).update({ created_by: issuer });
  return token;
}

async function create(name: string, token = operator, body = draft(name)) {
  const res = await t.call('POST', '/api/policies', { token, body });
  expect(res.status).toBe(201);
  return res;
}

describe('creating policies', () => {
  test('an operator creates a draft; the author is the caller; ETag, Location and event', async () => {
    const res = await create('prod-small-batches');
    expect(res.headers.get('location')).toBe(`/api/policies/${res.body.id}`);
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]+"$/);
    expect(res.body).toMatchObject({
      name: 'prod-small-batches',
      expression: 'agent.labels.env != "prod" || rollout.batchPercent <= 10',
      scope: [],
      state: 'draft',
      enabled: true,
      builtin: false,
      author: 'default.operator',
      approver: null,
      approvedAt: null,
    });
    const event = await t.database.db('events').where({ type: 'policy.created', subject: res.body.id }).first();
    expect(event).toMatchObject({ tenant_id: 'default', source: '/api/policies' });
    expect(event.data.name).toBe('prod-small-batches');
    const detail = await t.call('GET', `/api/policies/${res.body.id}`, { token: viewer });
    expect(detail.status).toBe(200);
    expect(detail.headers.get('etag')).toBe(res.headers.get('etag'));
    expect(detail.body).toEqual(res.body);
  });

  test.each([
    ['agent.nope == "x"', 'No such key: nope (at offset 6)'],
    ['rollout.batchPercent', 'must evaluate to bool, but its type is int'],
    ['agent.labels.env == ', 'Unexpected token: EOF'],
    ['rollout.batchPercent + "x" == 1', 'no such overload: int + string'],
    ['secrets.all(s, true)', 'Unknown variable: secrets'],
  ])('expression %s is 400 at body.expression with the checker’s message', async (expression, message) => {
    const res = await t.call('POST', '/api/policies', { token: operator, body: draft('bad', expression) });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${PROBLEMS}/validation-failed`);
    expect(res.body.errors[0].path).toBe('body.expression');
    expect(res.body.errors[0].message).toContain(message);
    expect(await t.database.db('policies').where({ name: 'bad' }).first()).toBeUndefined();
  });

  test.each([
    [{ expression: 'true' }, 'body.name'],
    [{ name: 'x' }, 'body.expression'],
    [{ name: '', expression: 'true' }, 'body.name'],
    [{ name: 'x', expression: '' }, 'body.expression'],
    [{ name: 'x', expression: 'true', scope: ['not-a-uuid'] }, 'body.scope.0'],
    [{ name: 'x', expression: 'true', enabled: 'yes' }, 'body.enabled'],
    [{ name: 'x', expression: 'true', state: 'approved' }, 'body'],
  ])('invalid body %j is 400 naming %s', async (body, path) => {
    const res = await t.call('POST', '/api/policies', { token: operator, body });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test('names are unique per tenant', async () => {
    await create('twice');
    const again = await t.call('POST', '/api/policies', { token: operator, body: draft('twice') });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe(`${PROBLEMS}/conflict`);
    const elsewhere = await t.call('POST', '/api/policies', {
      token: await t.token('acme.operator'),
      body: draft('twice'),
    });
    expect(elsewhere.status).toBe(201);
  });

  test('scope names live groups of the tenant', async () => {
    const [group] = await t.database
      .db('groups')
      .insert({ tenant_id: 'default', name: `scoped-${randomUUID()}` })
      .returning('id');
    const res = await create('scoped', operator, draft('scoped', 'true', { scope: [group.id, group.id] }));
    expect(res.body.scope).toEqual([group.id]);
    const [foreign] = await t.database
      .db('groups')
      .insert({ tenant_id: 'acme', name: `foreign-${randomUUID()}` })
      .returning('id');
    const refused = await t.call('POST', '/api/policies', {
      token: operator,
      body: draft('foreign-scope', 'true', { scope: [foreign.id] }),
    });
    // Another tenant's group is one this tenant does not have: 404, as for a rollout's target.
    expect(refused.status).toBe(404);
    expect(refused.body.detail).toBe(`No group with id '${foreign.id}'.`);
  });
});

describe('checking an expression without saving it', () => {
  const check = (expression: unknown, token = operator) =>
    t.call('POST', '/api/policies/check', { token, body: { expression } });

  test('a good expression is { ok: true }; nothing is saved, no event', async () => {
    const before = await t.database.db('events').where({ tenant_id: 'default' }).count<{ count: string }[]>();
    const res = await check('agent.labels.env != "prod" || rollout.batchPercent <= 10');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    const after = await t.database.db('events').where({ tenant_id: 'default' }).count<{ count: string }[]>();
    expect(after[0]!.count).toBe(before[0]!.count);
  });

  test.each(['agent.nope == "x"', 'rollout.batchPercent', 'agent.labels.env == '])(
    'expression %s is the 400 creating it would be',
    async (expression) => {
      const checked = await check(expression);
      const created = await t.call('POST', '/api/policies', { token: operator, body: draft('never', expression) });
      expect(checked.status).toBe(400);
      expect(created.status).toBe(400);
      expect(checked.body.type).toBe(`${PROBLEMS}/validation-failed`);
      expect(checked.body.errors).toEqual(created.body.errors);
      expect(checked.body.detail).toBe(created.body.detail);
    },
  );

  test.each([
    [{}, 'body.expression'],
    [{ expression: '' }, 'body.expression'],
    [{ expression: 'x'.repeat(4097) }, 'body.expression'],
    [{ expression: 'true', name: 'x' }, 'body'],
  ])('body %j is 400 naming %s', async (body, path) => {
    const res = await t.call('POST', '/api/policies/check', { token: operator, body });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test('as creating: operators and admins may, viewers and auditors may not', async () => {
    expect((await check('true', admin)).status).toBe(200);
    expect((await check('true', viewer)).status).toBe(403);
    expect((await check('true', await t.token('default.auditor'))).status).toBe(403);
    expect((await t.call('POST', '/api/policies/check', { body: { expression: 'true' } })).status).toBe(401);
  });
});

describe('roles', () => {
  test.each([
    ['default.viewer', 'GET', '/api/policies', 200],
    ['default.auditor', 'GET', '/api/policies', 200],
    ['default.viewer', 'POST', '/api/policies', 403],
    ['default.auditor', 'POST', '/api/policies', 403],
    ['default.operator', 'POST', '/api/policies', 201],
    ['default.admin', 'POST', '/api/policies', 201],
    ['default.peer', 'GET', '/api/policies', 403],
  ])('%s: %s %s is %i', async (client, method, path, status) => {
    const body = method === 'POST' ? draft(`role-${randomUUID().slice(0, 8)}`) : undefined;
    const res = await t.call(method, path, { token: await t.token(client), body });
    expect(res.status).toBe(status);
  });

  test('only admins approve; viewers may not edit, switch or evaluate', async () => {
    const { body } = await create('roles-target');
    const byOperator = await t.call('POST', `/api/policies/${body.id}/approve`, { token: operator });
    expect(byOperator.status).toBe(403);
    expect(byOperator.body.type).toBe(`${PROBLEMS}/forbidden`);
    for (const [method, path, payload] of [
      ['PUT', `/api/policies/${body.id}`, draft('roles-target')],
      ['POST', `/api/policies/${body.id}/disable`, undefined],
      ['POST', `/api/policies/${body.id}/enable`, undefined],
      [
        'POST',
        '/api/policies/evaluate',
        { configurationId: randomUUID(), version: 1, target: { agentIds: [randomUUID()] } },
      ],
    ] as const) {
      expect((await t.call(method, path, { token: viewer, body: payload })).status).toBe(403);
    }
    const operatorPat = await t.pat('operator');
    expect((await t.call('POST', `/api/policies/${body.id}/disable`, { token: operatorPat })).status).toBe(200);
  });

  test('unauthenticated calls are 401', async () => {
    expect((await t.call('GET', '/api/policies')).status).toBe(401);
  });
});

describe('approval', () => {
  test('the author may not approve; another admin may; approving again changes nothing', async () => {
    const { body } = await create('author-approves', admin);
    expect(body.author).toBe('default.admin');
    const self = await t.call('POST', `/api/policies/${body.id}/approve`, { token: admin });
    expect(self.status).toBe(403);
    expect(self.body.type).toBe(`${PROBLEMS}/forbidden`);
    expect(self.body.detail).toBe(
      "'default.admin' wrote policy 'author-approves' and cannot approve it; another admin must.",
    );
    expect((await t.call('GET', `/api/policies/${body.id}`, { token: admin })).body.state).toBe('draft');

    const approved = await t.call('POST', `/api/policies/${body.id}/approve`, { token: secondAdmin });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ state: 'approved', approver: 'second-admin', author: 'default.admin' });
    expect(approved.body.approvedAt).toEqual(expect.any(String));
    const event = await t.database.db('events').where({ type: 'policy.approved', subject: body.id }).first();
    expect(event.data.approver).toBe('second-admin');

    const again = await t.call('POST', `/api/policies/${body.id}/approve`, { token: secondAdmin });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(approved.headers.get('etag'));
    expect(again.body).toEqual(approved.body);
    expect(await t.database.db('events').where({ type: 'policy.approved', subject: body.id })).toHaveLength(1);
    // the author is still refused, even when there is nothing left to do
    expect((await t.call('POST', `/api/policies/${body.id}/approve`, { token: admin })).status).toBe(403);
  });

  test('a PAT acts for the admin who issued it: neither side gets round four eyes', async () => {
    const issued = await t.call('POST', '/api/pats', { token: admin, body: { name: 'admins-robot', role: 'admin' } });
    expect(issued.status).toBe(201);
    const robot = issued.body.token;

    const byAdmin = await create('written-by-admin', admin);
    const robotApproves = await t.call('POST', `/api/policies/${byAdmin.body.id}/approve`, { token: robot });
    expect(robotApproves.status).toBe(403);
    expect(robotApproves.body.detail).toBe(
      "'admins-robot' cannot approve policy 'written-by-admin': it was written by 'default.admin' and both act for 'default.admin'; another admin must.",
    );

    const byRobot = await create('written-by-robot', robot);
    expect(byRobot.body.author).toBe('admins-robot');
    const adminApproves = await t.call('POST', `/api/policies/${byRobot.body.id}/approve`, { token: admin });
    expect(adminApproves.status).toBe(403);
    expect(adminApproves.body.detail).toContain("both act for 'default.admin'");
    const other = await t.call('POST', `/api/policies/${byRobot.body.id}/approve`, { token: secondAdmin });
    expect(other.status).toBe(200);
  });

  test('a change after approval returns the policy to draft and clears the approver', async () => {
    const { body } = await create('changed-after-approval');
    const approved = await t.call('POST', `/api/policies/${body.id}/approve`, { token: admin });
    expect(approved.body).toMatchObject({ state: 'approved', approver: 'default.admin' });

    // switching it off and on, or writing back the same content, is not a change to what was approved
    expect((await t.call('POST', `/api/policies/${body.id}/disable`, { token: operator })).body.state).toBe('approved');
    const same = await t.call('PUT', `/api/policies/${body.id}`, {
      token: operator,
      body: draft('changed-after-approval', body.expression, { enabled: true }),
    });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ state: 'approved', approver: 'default.admin', enabled: true });

    const changed = await t.call('PUT', `/api/policies/${body.id}`, {
      token: operator,
      body: draft('changed-after-approval', 'agent.labels.env != "prod" || rollout.batchPercent <= 50'),
      headers: { 'if-match': same.headers.get('etag')! },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      state: 'draft',
      approver: null,
      approvedAt: null,
      expression: 'agent.labels.env != "prod" || rollout.batchPercent <= 50',
    });
    expect(changed.headers.get('etag')).not.toBe(same.headers.get('etag'));
    const event = await t.database
      .db('events')
      .where({ type: 'policy.updated', subject: body.id })
      .orderBy('seq', 'desc')
      .first();
    expect(event.data.state).toBe('draft');
  });

  test('an update is type-checked too', async () => {
    const { body } = await create('update-checked');
    const res = await t.call('PUT', `/api/policies/${body.id}`, {
      token: operator,
      body: draft('update-checked', 'agent.labels'),
    });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toEqual({
      path: 'body.expression',
      message: 'must evaluate to bool, but its type is map<string, string>',
    });
  });

  test('renaming onto another policy’s name is 409', async () => {
    await create('taken-name');
    const { body } = await create('renamed');
    const res = await t.call('PUT', `/api/policies/${body.id}`, { token: operator, body: draft('taken-name') });
    expect(res.status).toBe(409);
  });
});

describe('If-Match', () => {
  test('a stale ETag is 412 on update, approve, enable and disable; the current one succeeds', async () => {
    const created = await create('concurrency');
    const stale = created.headers.get('etag')!;
    const id = created.body.id;
    const updated = await t.call('PUT', `/api/policies/${id}`, {
      token: operator,
      body: draft('concurrency', 'true'),
      headers: { 'if-match': stale },
    });
    expect(updated.status).toBe(200);
    const current = updated.headers.get('etag')!;

    for (const [method, path, body] of [
      ['PUT', `/api/policies/${id}`, draft('concurrency', 'false')],
      ['POST', `/api/policies/${id}/approve`, undefined],
      ['POST', `/api/policies/${id}/disable`, undefined],
    ] as const) {
      const res = await t.call(method, path, { token: admin, body, headers: { 'if-match': stale } });
      expect(res.status).toBe(412);
      expect(res.body.type).toBe(`${PROBLEMS}/precondition-failed`);
    }
    expect((await t.call('GET', `/api/policies/${id}`, { token: admin })).body).toMatchObject({
      expression: 'true',
      state: 'draft',
      enabled: true,
    });

    const disabled = await t.call('POST', `/api/policies/${id}/disable`, {
      token: operator,
      headers: { 'if-match': current },
    });
    expect(disabled.status).toBe(200);
    const enabledStale = await t.call('POST', `/api/policies/${id}/enable`, {
      token: operator,
      headers: { 'if-match': current },
    });
    expect(enabledStale.status).toBe(412);
    const approved = await t.call('POST', `/api/policies/${id}/approve`, {
      token: admin,
      headers: { 'if-match': disabled.headers.get('etag')! },
    });
    expect(approved.status).toBe(200);
  });

  test('If-None-Match answers 304', async () => {
    const created = await create('not-modified');
    const res = await t.call('GET', `/api/policies/${created.body.id}`, {
      token: viewer,
      headers: { 'if-none-match': created.headers.get('etag')! },
    });
    expect(res.status).toBe(304);
  });

  test('10 concurrent updates with the same ETag: exactly one wins', async () => {
    const created = await create('race');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.call('PUT', `/api/policies/${created.body.id}`, {
          token: operator,
          body: draft('race', `rollout.batchPercent <= ${i + 1}`),
          headers: { 'if-match': created.headers.get('etag')! },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 412)).toHaveLength(9);
  });

  test('unknown ids are 404', async () => {
    const id = randomUUID();
    expect((await t.call('GET', `/api/policies/${id}`, { token: admin })).status).toBe(404);
    expect((await t.call('PUT', `/api/policies/${id}`, { token: admin, body: draft('x') })).status).toBe(404);
    expect((await t.call('POST', `/api/policies/${id}/approve`, { token: admin })).status).toBe(404);
    expect((await t.call('POST', `/api/policies/${id}/enable`, { token: admin })).status).toBe(404);
    expect((await t.call('GET', '/api/policies/not-a-uuid', { token: admin })).status).toBe(400);
  });
});

describe('built-in policies and lists', () => {
  test('each tenant gets the built-ins, approved by system and disabled; they can be switched, not edited', async () => {
    const list = await t.call('GET', '/api/policies?limit=1000', { token: await t.token('acme.viewer') });
    expect(list.status).toBe(200);
    const builtins = list.body.items.filter((p: { builtin: boolean }) => p.builtin);
    expect(builtins.map((p: { name: string }) => p.name).sort()).toEqual([
      'healthy-agents-only',
      'no-prod-big-batch',
      'published-only',
    ]);
    for (const policy of builtins)
      expect(policy).toMatchObject({ state: 'approved', enabled: false, author: 'system', approver: 'system' });

    const acmeOperator = await t.token('acme.operator');
    const [healthy] = builtins.filter((p: { name: string }) => p.name === 'healthy-agents-only');
    const enabled = await t.call('POST', `/api/policies/${healthy.id}/enable`, { token: acmeOperator });
    expect(enabled.body).toMatchObject({ enabled: true, state: 'approved' });
    const again = await t.call('POST', `/api/policies/${healthy.id}/enable`, { token: acmeOperator });
    expect(again.headers.get('etag')).toBe(enabled.headers.get('etag'));
    const edit = await t.call('PUT', `/api/policies/${healthy.id}`, {
      token: acmeOperator,
      body: draft('healthy-agents-only', 'true'),
    });
    expect(edit.status).toBe(409);
    expect(edit.body.detail).toContain('built-in');

    // listing again creates nothing more
    const relisted = await t.call('GET', '/api/policies?limit=1000', { token: acmeOperator });
    expect(relisted.body.items.filter((p: { builtin: boolean }) => p.builtin)).toHaveLength(3);
  });

  test('pages with filters: no duplicates, no gaps, X-Total-Count right', async () => {
    const tenant = 'paging';
    const pat = await patIssuedBy('alice', 'operator', tenant, 'paging-author');
    const approver = await patIssuedBy('bob', 'admin', tenant, 'paging-approver');
    for (let i = 0; i < 12; i++) {
      const { body } = await create(`page-${i}`, pat);
      if (i % 3 === 0) await t.call('POST', `/api/policies/${body.id}/approve`, { token: approver });
      if (i % 2 === 0) await t.call('POST', `/api/policies/${body.id}/disable`, { token: pat });
    }
    const collect = async (query: string) => {
      const seen: string[] = [];
      let url = `/api/policies?limit=2&${query}`;
      let total: string;
      for (;;) {
        const res = await t.call('GET', url, { token: pat });
        expect(res.status).toBe(200);
        total = res.headers.get('x-total-count')!;
        seen.push(...res.body.items.map((p: { name: string }) => p.name));
        const link = res.headers.get('link');
        if (!link) break;
        url = link.replace(/^<http:\/\/fleet\.test/, '').replace(/>; rel="next"$/, '');
      }
      return { seen, total: Number(total) };
    };
    const all = await collect('');
    expect(all.total).toBe(15); // 12 + 3 built-ins
    expect(new Set(all.seen).size).toBe(15);
    const drafts = await collect('state=draft');
    expect(drafts.seen).toEqual(['page-1', 'page-2', 'page-4', 'page-5', 'page-7', 'page-8', 'page-10', 'page-11']);
    expect(drafts.total).toBe(8);
    const approvedEnabled = await collect('state=approved&enabled=true');
    expect(approvedEnabled.seen).toEqual(['page-3', 'page-9']);
    const disabled = await collect('enabled=false&offset=0');
    expect(disabled.total).toBe(9); // 6 custom + 3 built-ins
    expect((await t.call('GET', '/api/policies?enabled=maybe', { token: pat })).status).toBe(400);
  });

  test('another tenant’s policy is 404, never 403', async () => {
    const { body } = await create('default-only');
    const acmeAdmin = await t.token('acme.admin');
    expect((await t.call('GET', `/api/policies/${body.id}`, { token: await t.token('acme.viewer') })).status).toBe(404);
    expect((await t.call('POST', `/api/policies/${body.id}/approve`, { token: acmeAdmin })).status).toBe(404);
    expect((await t.call('PUT', `/api/policies/${body.id}`, { token: acmeAdmin, body: draft('x') })).status).toBe(404);
    expect((await t.call('POST', `/api/policies/${body.id}/disable`, { token: acmeAdmin })).status).toBe(404);
    const list = await t.call('GET', '/api/policies?limit=1000', { token: acmeAdmin });
    expect(list.body.items.map((p: { id: string }) => p.id)).not.toContain(body.id);
  });
});

describe('evaluation', () => {
  const tenant = 'fleet-eval';
  let author: string;
  let approver: string;
  let prod: string;
  let dev: string;
  const agents: Record<string, string> = {};
  let configurationId: string;

  async function agent(name: string, groupId: string, labels: Record<string, string>, status = 'online') {
    const id = randomUUID();
    await t.database
      .db('agents')
      .insert({ id, tenant_id: tenant, group_id: groupId, name, labels: JSON.stringify(labels), status });
    agents[name] = id;
  }

  async function enforce(name: string, expression: string, scope: string[] = []) {
    const { body } = await create(name, author, draft(name, expression, { scope }));
    const approved = await t.call('POST', `/api/policies/${body.id}/approve`, { token: approver });
    expect(approved.body).toMatchObject({ state: 'approved', enabled: true });
    return body.id as string;
  }

  const evaluate = (body: unknown, token = author) => t.call('POST', '/api/policies/evaluate', { token, body });
  const deniedBy = (res: { body: { verdicts: Array<{ agentId: string; deniedBy: Array<{ name: string }> }> } }) =>
    Object.fromEntries(
      Object.entries(agents)
        .map(
          ([name, id]) =>
            [
              name,
              res.body.verdicts
                .find((v) => v.agentId === id)
                ?.deniedBy.map((d) => d.name)
                .sort(),
            ] as const,
        )
        .filter(([, denials]) => denials !== undefined),
    );

  beforeAll(async () => {
    author = await patIssuedBy('alice', 'operator', tenant, 'eval-author');
    approver = await patIssuedBy('bob', 'admin', tenant, 'eval-approver');
    [{ id: prod }] = await t.database.db('groups').insert({ tenant_id: tenant, name: 'prod' }).returning('id');
    [{ id: dev }] = await t.database.db('groups').insert({ tenant_id: tenant, name: 'dev' }).returning('id');
    await agent('prod-1', prod, { env: 'prod', region: 'eu' });
    await agent('prod-2', prod, { env: 'prod', region: 'us' }, 'offline');
    await agent('dev-1', dev, { env: 'dev' });
    await agent('unlabelled', dev, {});
    const content = (replicas: number) => `receivers:\n  otlp: {}\nreplicas: ${replicas}\n`;
    [{ id: configurationId }] = await t.database
      .db('configurations')
      .insert({
        tenant_id: tenant,
        name: 'collector',
        format: 'yaml',
        labels: JSON.stringify({ team: 'obs' }),
        latest_version: 2,
        published_version: 1,
      })
      .returning('id');
    await t.database.db('configuration_versions').insert([
      {
        configuration_id: configurationId,
        version: 1,
        state: 'published',
        content: content(3),
        content_hash: createHash('sha256').update(content(3)).digest('hex'),
        author: 'alice',
        published_at: new Date(),
        published_by: 'alice',
      },
      {
        configuration_id: configurationId,
        version: 2,
        state: 'draft',
        content: content(9),
        content_hash: createHash('sha256').update(content(9)).digest('hex'),
        author: 'alice',
      },
    ]);
  });

  // each test enforces its own policies
  afterEach(() => t.database.db('policies').where({ tenant_id: tenant }).update({ enabled: false }));

  test('a runaway policy (catastrophic regex) is stopped by its time budget and denies, saying why', async () => {
    await enforce('runaway', '"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".matches("^(a+)+$") || true');
    await enforce('sane', 'agent.status == "online" || true');
    const started = Date.now();
    const res = await evaluate({ configurationId, version: 1, target: { groupIds: [prod, dev] } });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res.status).toBe(200);
    expect(res.body.allowed).toBe(false);
    for (const verdict of res.body.verdicts) {
      expect(verdict.deniedBy).toEqual([
        expect.objectContaining({ name: 'runaway', error: expect.stringMatching(/exceeded its time budget/) }),
      ]);
    }
    // the stall is bounded: the API answers right after
    expect((await t.call('GET', '/healthz')).status).toBe(200);
  });

  test('with nothing enforced every agent is allowed', async () => {
    await create('only-a-draft', author, draft('only-a-draft', 'false'));
    const res = await evaluate({ configurationId, version: 1, target: { groupIds: [prod, dev] } });
    expect(res.status).toBe(200);
    expect(res.body.allowed).toBe(true);
    expect(res.body.verdicts).toHaveLength(4);
    expect(
      res.body.verdicts.every((v: { allowed: boolean; deniedBy: unknown[] }) => v.allowed && v.deniedBy.length === 0),
    ).toBe(true);
  });

  test('labels and the batch size: prod agents are denied a big batch, allowed a small one (200, never 422)', async () => {
    const id = await enforce('prod-batches', 'agent.labels.env != "prod" || rollout.batchPercent <= 10');
    const big = await evaluate({
      configurationId,
      version: 1,
      target: { groupIds: [prod, dev] },
      rollout: { batchPercent: 50 },
    });
    expect(big.status).toBe(200);
    expect(big.body.allowed).toBe(false);
    expect(big.body.verdicts.find((v: { agentId: string }) => v.agentId === agents['prod-1'])).toEqual({
      agentId: agents['prod-1'],
      allowed: false,
      deniedBy: [{ policyId: id, name: 'prod-batches' }],
    });
    // an agent without the label makes `agent.labels.env` a runtime error: a deny, with the message
    expect(deniedBy(big)).toEqual({
      'prod-1': ['prod-batches'],
      'prod-2': ['prod-batches'],
      'dev-1': [],
      unlabelled: ['prod-batches'],
    });
    const unlabelled = big.body.verdicts.find((v: { agentId: string }) => v.agentId === agents.unlabelled);
    expect(unlabelled.deniedBy[0].error).toBe('No such key: env (at offset 13)');

    const small = await evaluate({
      configurationId,
      version: 1,
      target: { groupIds: [prod] },
      rollout: { batchPercent: 10 },
    });
    expect(small.body.allowed).toBe(true);
    // a batch of one agent out of two is 50%
    const bySize = await evaluate({
      configurationId,
      version: 1,
      target: { groupIds: [prod] },
      rollout: { batchSize: 1 },
    });
    expect(bySize.body.allowed).toBe(false);
    // no rollout given: judged as one batch of the whole target
    const whole = await evaluate({ configurationId, version: 1, target: { agentIds: [agents['prod-1']] } });
    expect(whole.body.allowed).toBe(false);
    // a fractional percentage, as a rollout's strategy may give it, is judged rounded up: 10.5 % is 11
    const fraction = (batchPercent: number) =>
      evaluate({ configurationId, version: 1, target: { groupIds: [prod] }, rollout: { batchPercent } });
    expect((await fraction(9.5)).body.allowed).toBe(true);
    expect((await fraction(10.5)).body.allowed).toBe(false);
  });

  test('content, scope, built-ins, and disabled or draft policies', async () => {
    await enforce('few-replicas', 'version.data.replicas <= 5 && has(version.data.receivers.otlp)', [dev]);
    const v1 = await evaluate({ configurationId, version: 1, target: { groupIds: [prod, dev] } });
    expect(v1.body.allowed).toBe(true);
    const v2 = await evaluate({ configurationId, version: 2, target: { groupIds: [prod, dev] } });
    // scoped to dev: prod agents are not judged by it
    expect(deniedBy(v2)).toEqual({
      'prod-1': [],
      'prod-2': [],
      'dev-1': ['few-replicas'],
      unlabelled: ['few-replicas'],
    });

    const list = await t.call('GET', '/api/policies?limit=100', { token: author });
    const builtin = (name: string) => list.body.items.find((p: { name: string }) => p.name === name).id;
    await t.call('POST', `/api/policies/${builtin('published-only')}/enable`, { token: author });
    await t.call('POST', `/api/policies/${builtin('healthy-agents-only')}/enable`, { token: author });
    const withBuiltins = await evaluate({
      configurationId,
      version: 2,
      target: { agentIds: [agents['prod-2'], agents['dev-1']] },
    });
    expect(deniedBy(withBuiltins)).toEqual({
      'prod-2': ['healthy-agents-only', 'published-only'],
      'dev-1': ['few-replicas', 'published-only'],
    });

    await t.call('POST', `/api/policies/${builtin('published-only')}/disable`, { token: author });
    const disabled = await evaluate({ configurationId, version: 2, target: { agentIds: [agents['prod-2']] } });
    expect(deniedBy(disabled)).toEqual({ 'prod-2': ['healthy-agents-only'] });
  });

  test('a group and an agent in it are judged once', async () => {
    const res = await evaluate({
      configurationId,
      version: 1,
      target: { groupIds: [prod], agentIds: [agents['prod-1'], agents['dev-1']] },
    });
    expect(res.body.verdicts.map((v: { agentId: string }) => v.agentId).sort()).toEqual(
      [agents['prod-1'], agents['prod-2'], agents['dev-1']].sort(),
    );
  });

  test('unknown or foreign configuration, version, group or agent is 404; a bad body is 400', async () => {
    const target = { groupIds: [prod] };
    const notFound = [
      { configurationId: randomUUID(), version: 1, target },
      { configurationId, version: 3, target },
      { configurationId, version: 1, target: { groupIds: [randomUUID()] } },
      { configurationId, version: 1, target: { agentIds: [randomUUID()] } },
    ];
    for (const body of notFound) {
      const res = await evaluate(body);
      expect(res.status).toBe(404);
      expect(res.body.type).toBe(`${PROBLEMS}/not-found`);
    }
    expect((await evaluate({ configurationId, version: 1, target }, operator)).status).toBe(404); // default tenant
    expect((await evaluate({ configurationId, version: 1, target: {} })).status).toBe(400);
    expect((await evaluate({ configurationId, version: 1, target, rollout: { batchPercent: 0 } })).status).toBe(400);
  });

  test('assertPolicies throws the exact 422 policy-denied problem', async () => {
    const id = await enforce('prod-batches-assert', 'agent.labels.env != "prod" || rollout.batchPercent <= 10', [prod]);
    const input = { configurationId, version: 1, target: { groupIds: [prod, dev] }, rollout: { batchPercent: 25 } };
    const error = await assertPolicies(t.database.db, tenant, input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolicyDeniedError);
    const problem = problemOf(error as PolicyDeniedError);
    const [first, second] = [agents['prod-1']!, agents['prod-2']!].sort();
    expect(problem.slug).toBe('policy-denied');
    expect(problem.status).toBe(422);
    expect(problem.title).toBe('Policy denied the push');
    expect(problem.detail).toBe(
      `Policy 'prod-batches-assert' denied the push to agent ${first}. 1 more denial in violations.`,
    );
    expect(problem.extensions).toEqual({
      policyId: id,
      agentId: first,
      violations: [
        { policyId: id, name: 'prod-batches-assert', agentId: first },
        { policyId: id, name: 'prod-batches-assert', agentId: second },
      ],
    });
    const allowed = await assertPolicies(t.database.db, tenant, { ...input, rollout: { batchPercent: 10 } });
    expect(allowed.allowed).toBe(true);
    const fraction = await assertPolicies(t.database.db, tenant, { ...input, rollout: { batchPercent: 2.5 } });
    expect(fraction.allowed).toBe(true);
    const foreign = await evaluatePolicies(t.database.db, 'default', input).catch((e: unknown) => e);
    expect(problemOf(foreign as NotFoundError).slug).toBe('not-found');
  });

  test('rendered by the problem renderer, the denial is the spec’s 422 body', async () => {
    await enforce('prod-batches-render', 'agent.labels.env != "prod" || rollout.batchPercent <= 10', [prod]);
    const input = {
      configurationId,
      version: 1,
      target: { agentIds: [agents['prod-1']!] },
      rollout: { batchPercent: 25 },
    };
    const headers: Record<string, string> = {};
    const ctx = {
      status: 200,
      body: undefined as unknown,
      type: '',
      path: '/api/rollouts/r1/start',
      method: 'POST',
      state: { requestId: 'req-1' },
      set: (name: string, value: string) => void (headers[name] = value),
      remove: () => undefined,
    };
    const error = await assertPolicies(t.database.db, tenant, input).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    createProblemRenderer(pino({ level: 'silent' }), `${PROBLEMS}`).error(ctx as never, error);
    expect(ctx.status).toBe(422);
    expect(ctx.type).toBe('application/problem+json');
    const policyId = (await t.database.db('policies').where({ tenant_id: tenant, name: 'prod-batches-render' }).first())
      .id;
    expect(ctx.body).toEqual({
      type: `${PROBLEMS}/policy-denied`,
      title: 'Policy denied the push',
      status: 422,
      detail: `Policy 'prod-batches-render' denied the push to agent ${agents['prod-1']}.`,
      instance: '/api/rollouts/r1/start',
      requestId: 'req-1',
      policyId,
      agentId: agents['prod-1'],
      violations: [{ policyId, name: 'prod-batches-render', agentId: agents['prod-1'] }],
    });
  });
});
