import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { eventually } from '../support/eventually';
import { sourceBody, startGitSourcesApp, wakeUps, type GitSourcesApp } from '../support/git-sources';
import type { TestApp } from '../support/app';
import { capturedLogger } from '../support/logs';

// Production behind a TLS-terminating proxy: the proxy says the original request was HTTPS.
const HTTPS = { 'x-forwarded-proto': 'https' };

let env: GitSourcesApp;
let t: TestApp;
let operator: string;
let acme: string;
let admin: string;
let acmeAdmin: string;
const { logger, lines: logLines } = capturedLogger();
beforeAll(async () => {
  env = await startGitSourcesApp({ Http__TrustProxy: 'true' }, { logger });
  t = env.t;
  operator = await t.token('default.operator');
  acme = await t.token('acme.operator');
  admin = await t.token('default.admin');
  acmeAdmin = await t.token('acme.admin');
});
afterAll(() => env?.close());

/** A source with a webhook token (issued by an admin: secrets are theirs), in the caller's tenant. */
async function sourceWithToken(token = operator, overrides: Record<string, unknown> = {}) {
  const created = await t.call('POST', '/api/git-sources', { token, body: sourceBody(overrides) });
  expect(created.status).toBe(201);
  const issued = await t.call('POST', `/api/git-sources/${created.body.id}/webhook-token`, {
    token: token === acme ? acmeAdmin : admin,
  });
  expect(issued.status).toBe(201);
  return { id: created.body.id as string, webhookToken: issued.body.token as string };
}

const deliver = (id: string, headers: Record<string, string> = {}, query = '', raw = '{"ref":"refs/heads/main"}') =>
  t.call('POST', `/api/git/webhook/${id}${query}`, {
    raw,
    headers: { 'content-type': 'application/json', ...HTTPS, ...headers },
  });

const webhookWakeUps = async (id: string) => (await wakeUps(env.client, id)).filter((r) => r === 'webhook').length;

const auditRows = (filter: Record<string, unknown>) =>
  t.database.db('audit_calls').where({ route: '/api/git/webhook/{sourceId}', ...filter });

describe('the token, in any of its three carriers', () => {
  test.each([
    ['X-Service-Webhook-Token', (token: string) => ({ headers: { 'x-service-webhook-token': token }, query: '' })],
    ['X-Gitlab-Token', (token: string) => ({ headers: { 'x-gitlab-token': token }, query: '' })],
    ['the token query parameter', (token: string) => ({ headers: {}, query: `?token=${token}` })],
  ])('%s is accepted: 202, and the loop has the signal', async (_carrier, carry) => {
    const { id, webhookToken } = await sourceWithToken();
    const { headers, query } = carry(webhookToken);
    const res = await deliver(id, headers, query);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'accepted', detail: expect.any(String) });
    // The answer comes after Temporal took the signal: it is in the history at once.
    expect(await webhookWakeUps(id)).toBe(1);
    await eventually(async () => {
      const [row] = await auditRows({ resource_id: id, status: 202 });
      expect(row).toMatchObject({
        actor_type: 'webhook',
        tenant_id: 'default',
        actor_id: id,
        path: `/api/git/webhook/${id}`,
      });
    });
  });

  test('the body is never parsed: any content type, invalid JSON, form data, a content coding', async () => {
    const { id, webhookToken } = await sourceWithToken();
    const auth = { 'x-service-webhook-token': webhookToken };
    for (const [type, raw] of [
      ['application/json', '{not json'],
      ['text/plain', 'push'],
      ['application/x-www-form-urlencoded', 'payload=%7B%7D'],
    ] as const) {
      const res = await deliver(id, { ...auth, 'content-type': type }, '', raw);
      expect([type, res.status]).toEqual([type, 202]);
    }
    const gzipped = await deliver(id, { ...auth, 'content-encoding': 'gzip' }, '', 'not really gzip');
    expect(gzipped.status).toBe(202);
    const empty = await t.call('POST', `/api/git/webhook/${id}`, { headers: { ...auth, ...HTTPS } });
    expect(empty.status).toBe(202);
    expect(await webhookWakeUps(id)).toBe(5);
  });
});

describe('refusals', () => {
  test('unknown source, malformed id, no token, a source without a token, a wrong token: one 401 body, each audited', async () => {
    const { id, webhookToken } = await sourceWithToken();
    const bare = await t.call('POST', '/api/git-sources', { token: operator, body: sourceBody() });
    const unknown = randomUUID();
    const attempts = [
      ['unknown source', unknown, { 'x-service-webhook-token': webhookToken }],
      ['malformed id', 'not-a-source', { 'x-service-webhook-token': webhookToken }],
      ['no token', id, {}],
      ['source without a token', bare.body.id, { 'x-service-webhook-token': webhookToken }],
      ['wrong token', id, { 'x-service-webhook-token': webhookToken.replace(/\.[a-z2-7]{7}$/, '.aaaaaaa') }],
      ['wrong GitLab token', id, { 'x-gitlab-token': 'guess' }],
    ] as const;
    const bodies = [];
    for (const [why, sourceId, headers] of attempts) {
      const res = await deliver(sourceId, headers);
      expect([why, res.status]).toEqual([why, 401]);
      const { instance, requestId, ...rest } = res.body;
      expect(instance).toBe(`/api/git/webhook/${sourceId}`);
      expect(requestId).toEqual(expect.any(String));
      expect(res.headers.get('www-authenticate')).toBeNull();
      bodies.push(rest);
    }
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(bodies[0]).toMatchObject({ type: 'http://fleet.test/errors/unauthorized', status: 401 });
    expect(await webhookWakeUps(id)).toBe(0);

    await eventually(async () => {
      const rows = await auditRows({ status: 401, actor_type: 'webhook' }).whereIn('path', [
        `/api/git/webhook/${unknown}`,
        '/api/git/webhook/not-a-source',
        `/api/git/webhook/${id}`,
        `/api/git/webhook/${bare.body.id}`,
      ]);
      expect(rows).toHaveLength(attempts.length);
      // A refusal names nobody; it lands in the source's tenant when the path names one.
      for (const row of rows) expect(row.actor).toBeNull();
      expect(rows.filter((row) => row.tenant_id === 'default')).toHaveLength(4);
    });
  });

  test('a rotated token works at once and the old one is refused (401, audited) from that moment', async () => {
    const { id, webhookToken: old } = await sourceWithToken();
    expect((await deliver(id, { 'x-service-webhook-token': old })).status).toBe(202);
    const rotated = await t.call('POST', `/api/git-sources/${id}/webhook-token`, { token: admin });
    const fresh = rotated.body.token as string;
    expect((await deliver(id, { 'x-service-webhook-token': old })).status).toBe(401);
    expect((await deliver(id, {}, `?token=${old}`)).status).toBe(401);
    expect((await deliver(id, { 'x-service-webhook-token': fresh })).status).toBe(202);
    expect(await webhookWakeUps(id)).toBe(2);
    await eventually(async () => expect(await auditRows({ resource_id: id, status: 401 })).toHaveLength(2));
  });

  test("another tenant's token does not wake a source, and a source's token works on no other", async () => {
    const mine = await sourceWithToken(operator);
    const theirs = await sourceWithToken(acme);
    expect((await deliver(mine.id, { 'x-service-webhook-token': theirs.webhookToken })).status).toBe(401);
    expect((await deliver(theirs.id, { 'x-service-webhook-token': mine.webhookToken })).status).toBe(401);
    expect(await webhookWakeUps(mine.id)).toBe(0);
    expect(await webhookWakeUps(theirs.id)).toBe(0);
    // The webhook needs no bearer token, but its source is still only its tenant's to see.
    expect((await t.call('GET', `/api/git-sources/${theirs.id}`, { token: operator })).status).toBe(404);
  });

  test('a paused source answers 202 but its loop is not signalled', async () => {
    const { id, webhookToken } = await sourceWithToken();
    await t.call('POST', `/api/git-sources/${id}/pause`, { token: operator });
    const res = await deliver(id, { 'x-service-webhook-token': webhookToken });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('paused');
    expect(await webhookWakeUps(id)).toBe(0);
  });

  test('a body over 1 MiB is 413 and signals nothing, declared or chunked', async () => {
    const { id, webhookToken } = await sourceWithToken();
    const big = 'x'.repeat(1024 * 1024 + 1);
    const declared = await deliver(id, { 'x-service-webhook-token': webhookToken }, '', big);
    expect(declared.status).toBe(413);
    expect(declared.body.type).toBe('http://fleet.test/errors/payload-too-large');

    const chunked = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${t.baseUrl}/api/git/webhook/${id}`);
      const req = request(
        url,
        {
          method: 'POST',
          headers: { 'x-service-webhook-token': webhookToken, ...HTTPS, 'content-type': 'text/plain' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write('y'.repeat(64 * 1024)); // 1.25 MiB, no Content-Length
      req.end();
    });
    expect(chunked).toBe(413);
    expect(await webhookWakeUps(id)).toBe(0);
    const exactly = await deliver(id, { 'x-service-webhook-token': webhookToken }, '', 'z'.repeat(1024 * 1024));
    expect(exactly.status).toBe(202);
  });

  test('the token is never logged or audited, whichever carrier brought it; the query string is never recorded', async () => {
    const { id, webhookToken } = await sourceWithToken();
    await deliver(id, {}, `?token=${webhookToken}`);
    await deliver(id, {}, `?token=${webhookToken}x`);
    await deliver(id, { 'x-gitlab-token': webhookToken });
    await eventually(async () => expect((await auditRows({ resource_id: id })).length).toBeGreaterThanOrEqual(3));
    const audit = JSON.stringify(await t.database.db('audit_events').select('*'));
    expect(audit).not.toContain(webhookToken);
    expect(audit).not.toContain('?token=');
    const logs = logLines.join('');
    expect(logs).toContain(`/api/git/webhook/${id}`); // the requests were logged...
    expect(logs).not.toContain(webhookToken); // ...without the token
    expect(logs).not.toContain('token=');
  });
});

describe('HTTPS only in Production', () => {
  test('plain HTTP is refused with 403 https-required, even with a valid token, and signals nothing', async () => {
    const { id, webhookToken } = await sourceWithToken();
    const res = await t.call('POST', `/api/git/webhook/${id}`, {
      raw: '{}',
      headers: { 'content-type': 'application/json', 'x-service-webhook-token': webhookToken },
    });
    expect(res.status).toBe(403);
    expect(res.body.type).toBe('http://fleet.test/errors/https-required');
    const viaHttpProxy = await deliver(id, { 'x-service-webhook-token': webhookToken, 'x-forwarded-proto': 'http' });
    expect(viaHttpProxy.status).toBe(403);
    expect(await webhookWakeUps(id)).toBe(0);
  });

  test('X-Forwarded-Proto counts only when Http:TrustProxy is on', async () => {
    const untrusting = await startGitSourcesApp();
    try {
      const token = await untrusting.t.token('default.admin');
      const created = await untrusting.t.call('POST', '/api/git-sources', { token, body: sourceBody() });
      const issued = await untrusting.t.call('POST', `/api/git-sources/${created.body.id}/webhook-token`, { token });
      expect(issued.status).toBe(201);
      const res = await untrusting.t.call('POST', `/api/git/webhook/${created.body.id}`, {
        headers: { ...HTTPS, 'x-service-webhook-token': issued.body.token },
      });
      expect(res.status).toBe(403);
      expect(res.body.type).toBe('http://fleet.test/errors/https-required');
    } finally {
      await untrusting.close();
    }
  });

  test('Development accepts plain HTTP (the local stack has no TLS)', async () => {
    const development = await startGitSourcesApp({ Environment: 'Development' });
    try {
      const token = await development.t.token('default.admin');
      const created = await development.t.call('POST', '/api/git-sources', { token, body: sourceBody() });
      const issued = await development.t.call('POST', `/api/git-sources/${created.body.id}/webhook-token`, { token });
      const res = await development.t.call('POST', `/api/git/webhook/${created.body.id}`, {
        headers: { 'x-service-webhook-token': issued.body.token },
      });
      expect(res.status).toBe(202);
    } finally {
      await development.close();
    }
  });
});
