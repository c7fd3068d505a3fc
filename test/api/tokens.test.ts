import { redeemBootstrapToken } from '../../domain/tokens/bootstrap-tokens';
import { generateToken, hashToken } from '../../domain/tokens/secret-token';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let operator: string;
beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
});
afterAll(() => t?.close());

async function group(tenant: string, name: string, deleted = false): Promise<string> {
  await t.database.db('tenants').insert({ id: tenant, display_name: tenant }).onConflict('id').ignore();
  const [row] = await t.database
    .db('groups')
    .insert({ tenant_id: tenant, name, deleted_at: deleted ? new Date() : null })
    .returning('id');
  return row.id;
}

describe('bootstrap tokens', () => {
  test('issued once: svc-bt format, hashed at rest, never shown again; the default group by default', async () => {
    const res = await t.call('POST', '/api/tokens', {
      token: operator,
      body: { name: 'rack 12', maxUses: 5, expiresInSeconds: 3600 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'rack 12', maxUses: 5, uses: 0, state: 'active', poolId: null });
    expect(res.body.token).toMatch(/^svc-bt\.[a-z2-7]{32}\.[a-z2-7]{7}$/);
    const defaultGroup = await t.database.db('groups').where({ tenant_id: 'default', name: 'default' }).first();
    expect(res.body.groupId).toBe(defaultGroup.id);
    const stored = await t.database.db('bootstrap_tokens').where({ id: res.body.id }).first();
    expect(stored.token_hash.equals(hashToken(res.body.token))).toBe(true);
    const detail = await t.call('GET', `/api/tokens/${res.body.id}`, { token: operator });
    expect(detail.body.token).toBeUndefined();
    expect(JSON.stringify((await t.call('GET', '/api/tokens', { token: operator })).body)).not.toContain(
      res.body.token,
    );
    expect(Date.parse(res.body.expiresAt) - Date.now()).toBeGreaterThan(3500_000);
  });

  test.each([
    [{ name: '' }, 'body.name'],
    [{ name: 'x', maxUses: 0 }, 'body.maxUses'],
    [{ name: 'x', expiresInSeconds: 10 }, 'body.expiresInSeconds'],
    [{ name: 'x', groupId: 'nope' }, 'body.groupId'],
    [{ name: 'x', token: 'mine' }, 'body'],
  ])('invalid issue %j is 400 at %s', async (body, path) => {
    const res = await t.call('POST', '/api/tokens', { token: operator, body });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test("a group the tenant does not have (none, deleted, or another tenant's) is 404, as for a rollout's target", async () => {
    const none = '00000000-0000-4000-8000-000000000000';
    const deleted = await group('default', 'retired', true);
    const foreign = await group('acme', 'acme-edge');
    for (const groupId of [none, deleted, foreign]) {
      const res = await t.call('POST', '/api/tokens', { token: operator, body: { name: 'x', groupId } });
      expect(res.status).toBe(404);
    }
  });

  test('viewers read, operators issue and revoke; other tenants see 404', async () => {
    const viewer = await t.token('default.viewer');
    expect((await t.call('POST', '/api/tokens', { token: viewer, body: { name: 'x' } })).status).toBe(403);
    const issued = await t.call('POST', '/api/tokens', { token: operator, body: { name: 'to revoke' } });
    expect((await t.call('GET', `/api/tokens/${issued.body.id}`, { token: viewer })).status).toBe(200);
    expect((await t.call('POST', `/api/tokens/${issued.body.id}/revoke`, { token: viewer })).status).toBe(403);
    const acme = await t.token('acme.operator');
    expect((await t.call('GET', `/api/tokens/${issued.body.id}`, { token: acme })).status).toBe(404);
    expect((await t.call('POST', `/api/tokens/${issued.body.id}/revoke`, { token: acme })).status).toBe(404);
    const revoked = await t.call('POST', `/api/tokens/${issued.body.id}/revoke`, { token: operator });
    expect(revoked.body.state).toBe('revoked');
    expect(await redeemBootstrapToken(t.database.db, issued.body.token)).toEqual({ ok: false, reason: 'revoked' });
  });

  test('listing filters by state', async () => {
    await t.call('POST', '/api/tokens', { token: operator, body: { name: 'listed' } });
    const revoked = await t.call('GET', '/api/tokens?state=revoked', { token: operator });
    expect(revoked.body.items.every((i: { state: string }) => i.state === 'revoked')).toBe(true);
    const active = await t.call('GET', '/api/tokens?state=active&limit=1000', { token: operator });
    expect(active.body.items.map((i: { name: string }) => i.name)).toContain('listed');
    expect(Number(active.headers.get('x-total-count'))).toBe(active.body.items.length);
  });
});

describe('redemption', () => {
  test('20 parallel redemptions of a single-use token: exactly one succeeds', async () => {
    const { body } = await t.call('POST', '/api/tokens', { token: operator, body: { name: 'single use' } });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => redeemBootstrapToken(t.database.db, body.token)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok && r.reason === 'exhausted')).toHaveLength(19);
    expect((await t.call('GET', `/api/tokens/${body.id}`, { token: operator })).body).toMatchObject({
      uses: 1,
      state: 'exhausted',
    });
  });

  test('a multi-use token admits exactly maxUses enrolments', async () => {
    const { body } = await t.call('POST', '/api/tokens', { token: operator, body: { name: 'five', maxUses: 5 } });
    const results = await Promise.all(
      Array.from({ length: 12 }, () => redeemBootstrapToken(t.database.db, body.token)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(5);
  });

  test('expired, unknown and malformed tokens are refused; a bad CRC never reaches the database', async () => {
    const { body } = await t.call('POST', '/api/tokens', { token: operator, body: { name: 'old' } });
    await t.database
      .db('bootstrap_tokens')
      .where({ id: body.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect(await redeemBootstrapToken(t.database.db, body.token)).toEqual({ ok: false, reason: 'expired' });
    expect(await redeemBootstrapToken(t.database.db, generateToken('svc-bt'))).toEqual({
      ok: false,
      reason: 'unknown',
    });
    const queries: string[] = [];
    const record = (q: { sql: string }) => queries.push(q.sql);
    t.database.db.on('query', record);
    expect(
      await redeemBootstrapToken(t.database.db, body.token.slice(0, -1) + (body.token.endsWith('a') ? 'b' : 'a')),
    ).toEqual({ ok: false, reason: 'malformed' });
    expect(await redeemBootstrapToken(t.database.db, 'svc-pat.not-even-close')).toEqual({
      ok: false,
      reason: 'malformed',
    });
    t.database.db.off('query', record);
    expect(queries).toEqual([]);
  });
});

describe('token pools', () => {
  test('a pool issues tokens with its settings until maxActiveTokens are active', async () => {
    const edge = await group('default', 'edge');
    const pool = await t.call('POST', '/api/tokens/pools', {
      token: operator,
      body: { name: 'edge-pool', groupId: edge, tokenTtlSeconds: 600, tokenMaxUses: 2, maxActiveTokens: 2 },
    });
    expect(pool.status).toBe(201);
    expect(pool.body).toMatchObject({ name: 'edge-pool', groupId: edge, maxActiveTokens: 2, activeTokens: 0 });
    const first = await t.call('POST', `/api/tokens/pools/${pool.body.id}/issue`, { token: operator });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ poolId: pool.body.id, groupId: edge, maxUses: 2, name: 'edge-pool #1' });
    const second = await t.call('POST', `/api/tokens/pools/${pool.body.id}/issue`, {
      token: operator,
      body: { name: 'named' },
    });
    expect(second.body.name).toBe('named');
    const third = await t.call('POST', `/api/tokens/pools/${pool.body.id}/issue`, { token: operator });
    expect(third.status).toBe(409);
    expect(third.body.detail).toMatch(/already has 2 active tokens/);

    // a used-up token no longer counts
    await redeemBootstrapToken(t.database.db, first.body.token);
    await redeemBootstrapToken(t.database.db, first.body.token);
    const fourth = await t.call('POST', `/api/tokens/pools/${pool.body.id}/issue`, { token: operator });
    expect(fourth.status).toBe(201);
    // Its default name counts every token the pool issued (#1 is used up, not reused).
    expect(fourth.body.name).toBe('edge-pool #3');
    expect((await t.call('GET', `/api/tokens/pools/${pool.body.id}`, { token: operator })).body.activeTokens).toBe(2);
    const listed = await t.call('GET', `/api/tokens?poolId=${pool.body.id}`, { token: operator });
    expect(listed.body.items).toHaveLength(3);
  });

  test('concurrent issues never exceed maxActiveTokens', async () => {
    const pool = await t.call('POST', '/api/tokens/pools', {
      token: operator,
      body: { name: 'racy', maxActiveTokens: 3 },
    });
    const results = await Promise.all(
      Array.from({ length: 10 }, () => t.call('POST', `/api/tokens/pools/${pool.body.id}/issue`, { token: operator })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 409)).toHaveLength(7);
  });

  test('pool validation, names, roles and tenants', async () => {
    expect((await t.call('POST', '/api/tokens/pools', { token: operator, body: { name: 'p' } })).status).toBe(400);
    await t.call('POST', '/api/tokens/pools', { token: operator, body: { name: 'dup', maxActiveTokens: 1 } });
    expect(
      (await t.call('POST', '/api/tokens/pools', { token: operator, body: { name: 'dup', maxActiveTokens: 1 } }))
        .status,
    ).toBe(409);
    const viewer = await t.token('default.viewer');
    expect(
      (await t.call('POST', '/api/tokens/pools', { token: viewer, body: { name: 'v', maxActiveTokens: 1 } })).status,
    ).toBe(403);
    const pools = await t.call('GET', '/api/tokens/pools', { token: viewer });
    expect(pools.status).toBe(200);
    const id = pools.body.items[0].id;
    const acme = await t.token('acme.operator');
    expect((await t.call('GET', `/api/tokens/pools/${id}`, { token: acme })).status).toBe(404);
    expect((await t.call('POST', `/api/tokens/pools/${id}/issue`, { token: acme })).status).toBe(404);
  });
});
