import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let operator: string;
beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
});
afterAll(() => t?.close());

/** Values a caller controls that the database cannot hold: always a 400, never a 500. */
describe('values the database cannot hold are 400, never 500', () => {
  test.each([
    ['POST', '/api/groups', { name: 'a\u0000b' }],
    ['POST', '/api/groups', { name: 'ok-1', description: 'x\u0000' }],
    ['POST', '/api/groups', { name: 'ok-2', labels: { env: 'p\u0000' } }],
    ['POST', '/api/configurations', { name: 'c-1', format: 'yaml', description: '\u0000' }],
    ['POST', '/api/tokens', { name: 'ok-3', maxUses: 1e12 }],
  ])('%s %s %j', async (method, path, body) => {
    const res = await t.call(method, path, { token: operator, body });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('http://fleet.test/errors/validation-failed');
    expect(JSON.stringify(res.body)).not.toMatch(/insert into|select /i);
  });

  test.each([
    '/api/groups?q=%00',
    '/api/agents?q=%00',
    '/api/configurations?q=%00',
    '/api/agents?label=k:%00',
    '/api/agents?configurationId=00000000-0000-4000-8000-000000000000&version=99999999999',
  ])('GET %s', async (path) => {
    expect((await t.call('GET', path, { token: operator })).status).toBe(400);
  });

  test('policy evaluation with a version beyond any integer', async () => {
    const res = await t.call('POST', '/api/policies/evaluate', {
      token: operator,
      body: { configurationId: '00000000-0000-4000-8000-000000000000', version: 2 ** 31, target: { groupIds: [] } },
    });
    expect(res.status).toBe(400);
  });

  test('a JSON document nested deeper than 256 levels is refused when saved, so compare never overflows', async () => {
    const created = await t.call('POST', '/api/configurations', {
      token: operator,
      body: { name: 'deep', format: 'json' },
    });
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const res = await t.call('POST', `/api/configurations/${created.body.id}/versions`, {
      token: operator,
      body: { content: deep },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ path: 'body.content' });
    expect(res.body.errors[0].message).toMatch(/nested deeper than 256/);
    const fine = '['.repeat(200) + ']'.repeat(200);
    expect(
      (
        await t.call('POST', `/api/configurations/${created.body.id}/versions`, {
          token: operator,
          body: { content: fine },
        })
      ).status,
    ).toBe(201);
  });
});

test('every labelled list reads `label` alike: a key asked to equal two values is a 400', async () => {
  for (const path of ['/api/agents', '/api/groups', '/api/configurations']) {
    const res = await t.call('GET', `${path}?label=env:prod&label=env:dev`, { token: operator });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ path: 'query.label' });
    expect((await t.call('GET', `${path}?label=env:prod&label=region:eu`, { token: operator })).status).toBe(200);
  }
});
