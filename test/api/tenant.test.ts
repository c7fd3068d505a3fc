import { Client } from 'pg';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('default.admin');
});
afterAll(() => t?.close());

const update = (displayName: string) => ({
  displayName,
  description: 'the default tenant',
  labels: { region: 'eu' },
  settings: { patDefaultTtlDays: 30 },
});

describe('tenant', () => {
  test('GET returns a strong ETag; If-None-Match answers 304', async () => {
    const res = await t.call('GET', '/api/tenant', { token: admin });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]+"$/);
    const again = await t.call('GET', '/api/tenant', {
      token: admin,
      headers: { 'if-none-match': res.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
  });

  test('PUT with the current ETag succeeds and returns the new ETag; the old one is then 412', async () => {
    const current = await t.call('GET', '/api/tenant', { token: admin });
    const etag = current.headers.get('etag')!;
    const put = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: update('Default fleet'),
      headers: { 'if-match': etag },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject(update('Default fleet'));
    const next = put.headers.get('etag');
    expect(next).not.toBe(etag);
    expect((await t.call('GET', '/api/tenant', { token: admin })).headers.get('etag')).toBe(next);

    const stale = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: update('lost update'),
      headers: { 'if-match': etag },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toBe('http://fleet.test/errors/precondition-failed');
    expect((await t.call('GET', '/api/tenant', { token: admin })).body.displayName).toBe('Default fleet');
  });

  test('a weak ETag never matches If-Match', async () => {
    const etag = (await t.call('GET', '/api/tenant', { token: admin })).headers.get('etag')!;
    const res = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: update('weak'),
      headers: { 'if-match': `W/${etag}` },
    });
    expect(res.status).toBe(412);
  });

  test('50 concurrent writes with the same ETag: exactly one succeeds, 49 get 412', async () => {
    const etag = (await t.call('GET', '/api/tenant', { token: admin })).headers.get('etag')!;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        t.call('PUT', '/api/tenant', { token: admin, body: update(`writer ${i}`), headers: { 'if-match': etag } }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(49);
    const winner = results.find((r) => r.status === 200)!;
    expect((await t.call('GET', '/api/tenant', { token: admin })).body.displayName).toBe(winner.body.displayName);
  });

  test('a change writes its event to the outbox in the same transaction, with a NOTIFY of its id', async () => {
    const listener = new Client({ connectionString: t.database.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => heard.push(n.payload!));
    await listener.query('LISTEN fleet_events');
    try {
      const res = await t.call('PUT', '/api/tenant', { token: admin, body: update('evented') });
      expect(res.status).toBe(200);
      const event = await t.database.db('events').where({ type: 'tenant.updated' }).orderBy('seq', 'desc').first();
      expect(event).toMatchObject({ tenant_id: 'default', source: '/api/tenant', subject: 'default' });
      expect(event.data.displayName).toBe('evented');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(heard).toContain(event.id);

      // a refused write leaves neither change nor event behind
      const count = (await t.database.db('events').count({ n: '*' }))[0]!.n;
      const refused = await t.call('PUT', '/api/tenant', {
        token: admin,
        body: update('refused'),
        headers: { 'if-match': '"00000000"' },
      });
      expect(refused.status).toBe(412);
      expect((await t.database.db('events').count({ n: '*' }))[0]!.n).toBe(count);
    } finally {
      await listener.end();
    }
  });

  test('the tenant default PAT lifetime applies to new PATs', async () => {
    await t.call('PUT', '/api/tenant', { token: admin, body: update('ttl') });
    const pat = await t.call('POST', '/api/pats', { token: admin, body: { name: 'short-lived', role: 'viewer' } });
    const days = (Date.parse(pat.body.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
  });
});
