import { hashToken } from '../../domain/tokens/secret-token';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('default.admin');
});
afterAll(() => t?.close());

describe('issuing PATs', () => {
  test('an admin issues a PAT; its token is shown once and only its hash is stored', async () => {
    const res = await t.call('POST', '/api/pats', {
      token: admin,
      body: { name: 'deployer', role: 'operator', allowedEndpoints: ['GET /api/tenant'], expiresInDays: 7 },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/api/pats/${res.body.id}`);
    expect(res.body).toMatchObject({
      name: 'deployer',
      role: 'operator',
      state: 'active',
      allowedEndpoints: ['GET /api/tenant'],
      createdBy: 'default.admin',
    });
    expect(res.body.token).toMatch(/^svc-pat\.[a-z2-7]{32}\.[a-z2-7]{7}$/);

    const detail = await t.call('GET', `/api/pats/${res.body.id}`, { token: admin });
    expect(detail.body.token).toBeUndefined();
    const list = await t.call('GET', '/api/pats', { token: admin });
    expect(JSON.stringify(list.body)).not.toContain(res.body.token);
    const row = await t.database.db('pats').where({ id: res.body.id }).first();
    expect(row.token_hash.equals(hashToken(res.body.token))).toBe(true);
    expect(JSON.stringify(row)).not.toContain(res.body.token.split('.')[1]);

    expect((await t.call('GET', '/api/tenant', { token: res.body.token })).status).toBe(200);
  });

  test('names are unique per tenant', async () => {
    await t.call('POST', '/api/pats', { token: admin, body: { name: 'twice', role: 'viewer' } });
    const again = await t.call('POST', '/api/pats', { token: admin, body: { name: 'twice', role: 'viewer' } });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('http://fleet.test/errors/conflict');
    const elsewhere = await t.call('POST', '/api/pats', {
      token: await t.token('acme.admin'),
      body: { name: 'twice', role: 'viewer' },
    });
    expect(elsewhere.status).toBe(201);
  });

  test.each([
    [{ name: '', role: 'viewer' }, 'body.name'],
    [{ name: 'x', role: 'root' }, 'body.role'],
    [{ name: 'x', role: 'viewer', expiresInDays: 0 }, 'body.expiresInDays'],
    [{ name: 'x', role: 'viewer', allowedEndpoints: [] }, 'body.allowedEndpoints'],
    [{ name: 'x', role: 'viewer', allowedEndpoints: ['GET /api/no-such-route'] }, 'body.allowedEndpoints.0'],
    [{ name: 'x', role: 'viewer', allowedEndpoints: ['tenant'] }, 'body.allowedEndpoints.0'],
  ])('invalid request %j is 400 naming %s', async (body, path) => {
    const res = await t.call('POST', '/api/pats', { token: admin, body });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test('a PAT limited to endpoints can only hand on what it may call', async () => {
    const limited = await t.pat('admin', { allowedEndpoints: ['POST /api/pats', 'GET /api/tenant'] });
    const wider = await t.call('POST', '/api/pats', { token: limited, body: { name: 'wider', role: 'viewer' } });
    expect(wider.status).toBe(400);
    const narrower = await t.call('POST', '/api/pats', {
      token: limited,
      body: { name: 'narrower', role: 'viewer', allowedEndpoints: ['GET /api/tenant'] },
    });
    expect(narrower.status).toBe(201);
  });
});

describe('revoking PATs', () => {
  test('a revoked PAT is refused at once', async () => {
    const created = await t.call('POST', '/api/pats', { token: admin, body: { name: 'to-revoke', role: 'viewer' } });
    const token = created.body.token;
    expect((await t.call('GET', '/api/tenant', { token })).status).toBe(200); // now cached
    const revoked = await t.call('POST', `/api/pats/${created.body.id}/revoke`, { token: admin });
    expect(revoked.status).toBe(200);
    expect(revoked.body.state).toBe('revoked');
    const refused = await t.call('GET', '/api/tenant', { token });
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/revoked/);
    const again = await t.call('POST', `/api/pats/${created.body.id}/revoke`, { token: admin });
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
  });

  test('a revocation made by another replica reaches this one through NOTIFY', async () => {
    const created = await t.call('POST', '/api/pats', { token: admin, body: { name: 'elsewhere', role: 'viewer' } });
    const token = created.body.token;
    expect((await t.call('GET', '/api/tenant', { token })).status).toBe(200); // cached here
    await t.database.db.transaction(async (trx) => {
      await trx('pats').where({ id: created.body.id }).update({ revoked_at: trx.fn.now() });
      await trx.raw("SELECT pg_notify('fleet_pat_changes', ?)", [created.body.id]);
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await t.call('GET', '/api/tenant', { token })).status).toBe(401);
  });
});

describe('listing PATs', () => {
  beforeAll(async () => {
    const db = t.database.db;
    await db('tenants').insert({ id: 'bulk', display_name: 'bulk' }).onConflict('id').ignore();
    // One statement: every row gets the same created_at, so only the key values (to the
    // microsecond, then id) tell the pages apart.
    await db('pats').insert(
      Array.from({ length: 130 }, (_, i) => ({
        tenant_id: 'bulk',
        name: `bulk-${String(i).padStart(3, '0')}`,
        token_hash: hashToken(`bulk-${i}`),
        role: i % 10 === 0 ? 'admin' : 'viewer',
        expires_at: new Date(Date.now() + 86_400_000),
        created_by: 'seed',
      })),
    );
  });

  async function walk(first: string, token: string) {
    const names: string[] = [];
    let next: string | null = first;
    let pages = 0;
    let total: string | null = null;
    while (next) {
      const res = await t.call('GET', next, { token });
      expect(res.status).toBe(200);
      total = res.headers.get('x-total-count');
      names.push(...res.body.items.map((p: { name: string }) => p.name));
      const link = res.headers.get('link');
      next = link
        ? new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!).pathname + new URL(/^<([^>]+)>/.exec(link)![1]!).search
        : null;
      pages++;
    }
    return { names, pages, total };
  }

  test('cursor pages cover every row once, with X-Total-Count and Link rel=next', async () => {
    const token = await t.pat('admin', { tenant: 'bulk', name: 'lister' });
    const { names, pages, total } = await walk('/api/pats?limit=50', token);
    expect(total).toBe('131');
    expect(pages).toBe(3);
    expect(new Set(names).size).toBe(131);
  });

  test('filters apply to every page and to the count', async () => {
    const token = await t.pat('admin', { tenant: 'bulk', name: 'filterer' });
    const { names, total } = await walk('/api/pats?role=admin&limit=5', token);
    expect(total).toBe('15'); // 13 seeded admins + lister + filterer
    expect(new Set(names).size).toBe(15);
  });

  test('offset pages link to the next offset', async () => {
    const token = await t.pat('admin', { tenant: 'bulk', name: 'offsetter' });
    const res = await t.call('GET', '/api/pats?limit=100&offset=0', { token });
    expect(res.headers.get('link')).toBe('<http://fleet.test/api/pats?limit=100&offset=100>; rel="next"');
    const { names } = await walk('/api/pats?limit=100&offset=0', token);
    expect(new Set(names).size).toBe(133);
  });

  test('bad paging parameters are 400', async () => {
    for (const query of ['limit=0', 'limit=1001', 'offset=-1', 'cursor=abc', 'cursor=x&offset=1', 'limit=ten']) {
      const res = await t.call('GET', `/api/pats?${query}`, { token: admin });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe('http://fleet.test/errors/validation-failed');
    }
  });
});
