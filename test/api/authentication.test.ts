import { generateKeyPair, SignJWT } from 'jose';
import { generateToken } from '../../domain/tokens/secret-token';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { testInfra } from '../support/infra-env';
import { fetchToken, TEST_AUDIENCE } from '../../scripts/infra/oidc-tokens';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

function expectUnauthorized(res: { status: number; headers: Headers; body: any }, detail?: RegExp) {
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.headers.get('www-authenticate')).toBe('Bearer');
  expect(res.body.type).toBe('http://fleet.test/errors/unauthorized');
  if (detail) expect(res.body.detail).toMatch(detail);
}

describe('operators with OIDC tokens', () => {
  test('a token from the configured issuer is accepted', async () => {
    const res = await t.call('GET', '/api/tenant', { token: await t.token('default.viewer') });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe('default');
  });

  test('no token, or another scheme, is 401', async () => {
    expectUnauthorized(await t.call('GET', '/api/tenant'));
    expectUnauthorized(await t.call('GET', '/api/tenant', { headers: { authorization: 'Basic YTpi' } }));
  });

  test('a forged token (claims edited after signing) is 401', async () => {
    const [header, payload, signature] = (await t.token('default.viewer')).split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...claims, roles: ['admin'] })).toString('base64url');
    expectUnauthorized(await t.call('GET', '/api/tenant', { token: `${header}.${forged}.${signature}` }), /signature/);
  });

  test('a token signed with another key under the issuer’s name and key id is 401', async () => {
    const genuine = await t.token('default.admin');
    const { kid } = JSON.parse(Buffer.from(genuine.split('.')[0]!, 'base64url').toString());
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ roles: ['admin'] })
      .setProtectedHeader({ alg: 'RS256', kid })
      .setIssuer(testInfra().oidcIssuer)
      .setAudience(TEST_AUDIENCE)
      .setSubject('mallory')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expectUnauthorized(await t.call('GET', '/api/tenant', { token: forged }), /signature/);
  });

  test('an expired token is 401', async () => {
    const token = await fetchToken(testInfra().oidcIssuer, 'default.expiring');
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expectUnauthorized(await t.call('GET', '/api/tenant', { token }), /expired/);
  });

  test('a token for another audience is 401', async () => {
    const token = await fetchToken(testInfra().oidcIssuer, 'default.admin', 'https://another.example/api');
    expectUnauthorized(await t.call('GET', '/api/tenant', { token }), /audience/);
  });

  test('a token from another issuer is 401', async () => {
    const token = await fetchToken(testInfra().strangerIssuer, 'default.admin');
    expectUnauthorized(await t.call('GET', '/api/tenant', { token }));
  });

  test('a valid token without a known role is 403', async () => {
    const res = await t.call('GET', '/api/tenant', { token: await t.token('default.norole') });
    expect(res.status).toBe(403);
    expect(res.body.detail).toMatch(/'roles' claim/);
  });

  test('a token with several roles gets all they grant', async () => {
    const token = await t.token('default.multi'); // auditor + operator
    expect((await t.call('GET', '/api/audit/events', { token })).status).toBe(200);
    expect((await t.call('PUT', '/api/tenant', { token, body: { displayName: 'x' } })).status).toBe(403);
  });
});

describe('automation with PATs', () => {
  test('a PAT with a bad CRC is refused without a database look-up', async () => {
    const token = await t.pat('admin');
    const cut = token.lastIndexOf('.');
    const badCrc = token.slice(0, cut + 1) + (token[cut + 1] === 'a' ? 'b' : 'a') + token.slice(cut + 2);
    const unknown = `svc-pat.${'a'.repeat(32)}.${'a'.repeat(7)}`;
    const queries: string[] = [];
    const record = (query: { sql: string }) => queries.push(query.sql);
    t.database.db.on('query', record);
    try {
      expectUnauthorized(await t.call('GET', '/api/tenant', { token: badCrc }), /malformed/);
      expectUnauthorized(await t.call('GET', '/api/tenant', { token: unknown }), /malformed/);
      expect(queries.filter((sql) => sql.includes('"pats"'))).toEqual([]);
    } finally {
      t.database.db.off('query', record);
    }
  });

  test('a well-formed but unknown PAT and an expired PAT are 401', async () => {
    expectUnauthorized(await t.call('GET', '/api/tenant', { token: generateToken('svc-pat') }), /not known/);
    const expired = await t.pat('viewer', { expiresAt: new Date(Date.now() - 1000) });
    expectUnauthorized(await t.call('GET', '/api/tenant', { token: expired }), /expired/);
  });

  test('a PAT outside its allowed endpoints gets 403 endpoint-not-allowed', async () => {
    const token = await t.pat('admin', { allowedEndpoints: ['GET /api/tenant', 'GET /api/pats/{id}'] });
    expect((await t.call('GET', '/api/tenant', { token })).status).toBe(200);
    const put = await t.call('PUT', '/api/tenant', { token, body: { displayName: 'x' } });
    expect(put.status).toBe(403);
    expect(put.body.type).toBe('http://fleet.test/errors/endpoint-not-allowed');
    expect(put.body.detail).toBe('This token is not allowed to call PUT /api/tenant.');
    expect((await t.call('GET', '/api/pats', { token })).status).toBe(403);
    expect((await t.call('GET', '/api/pats/00000000-0000-4000-8000-000000000000', { token })).status).toBe(404);
  });

  test('the audit trail records the PAT name and its last use', async () => {
    const token = await t.pat('viewer', { name: 'nightly-report' });
    expect((await t.call('GET', '/api/tenant', { token })).status).toBe(200);
    const auditor = await t.token('default.auditor');
    const found = await eventually(async () => {
      const res = await t.call('GET', '/api/audit/events?actor=nightly-report', { token: auditor });
      expect(res.body.items).toHaveLength(1);
      return res.body.items[0];
    });
    expect(found).toMatchObject({
      actorType: 'pat',
      actor: 'nightly-report',
      method: 'GET',
      path: '/api/tenant',
      status: 200,
    });
    const admin = await t.token('default.admin');
    const list = await t.call('GET', '/api/pats?state=active&limit=1000', { token: admin });
    const pat = list.body.items.find((p: { name: string }) => p.name === 'nightly-report');
    expect(pat.lastUsedAt).not.toBeNull();
  });
});
