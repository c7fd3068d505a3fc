import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const ROLES = ['viewer', 'operator', 'auditor', 'admin', 'peer'] as const;
type Role = (typeof ROLES)[number];

/** One route of each class the foundation has, and the roles that may call it. */
const classes: Array<{ name: string; method: string; path: string; body?: unknown; allowed: Role[] }> = [
  { name: 'read', method: 'GET', path: '/api/tenant', allowed: ['viewer', 'operator', 'auditor', 'admin'] },
  { name: 'read inventory', method: 'GET', path: '/api/agents', allowed: ['viewer', 'operator', 'auditor', 'admin'] },
  {
    name: 'day-to-day change',
    method: 'POST',
    path: '/api/groups',
    body: { name: 'g' },
    allowed: ['operator', 'admin'],
  },
  {
    name: 'issue bootstrap tokens',
    method: 'POST',
    path: '/api/tokens',
    body: { name: 't' },
    allowed: ['operator', 'admin'],
  },
  { name: 'tenant settings', method: 'PUT', path: '/api/tenant', body: { displayName: 'Default' }, allowed: ['admin'] },
  { name: 'list PATs', method: 'GET', path: '/api/pats', allowed: ['admin'] },
  { name: 'issue PATs', method: 'POST', path: '/api/pats', body: { name: 'p', role: 'viewer' }, allowed: ['admin'] },
  { name: 'audit log', method: 'GET', path: '/api/audit/events', allowed: ['auditor', 'admin'] },
  { name: 'audit verification', method: 'GET', path: '/api/audit/verify', allowed: ['auditor', 'admin'] },
  // A peer's PAT reaches the federation endpoints and nothing else (docs/federation.md).
  {
    name: 'OpenAPI document',
    method: 'GET',
    path: '/api/openapi.json',
    allowed: ['viewer', 'operator', 'auditor', 'admin'],
  },
];

describe.each(['oidc', 'pat'] as const)('roles enforced for %s callers', (kind) => {
  const cases = classes.flatMap((c) => ROLES.map((role) => [c.name, role, c] as const));
  test.each(cases)('%s as %s', async (_name, role, c) => {
    const token = kind === 'oidc' ? await t.token(`default.${role}`) : await t.pat(role);
    // unique names, so that each call can succeed on its own
    const body =
      c.method === 'POST'
        ? { ...(c.body as object), name: `${(c.body as { name: string }).name}-${kind}-${role}` }
        : c.body;
    const res = await t.call(c.method, c.path, { token, body });
    if (c.allowed.includes(role)) {
      expect(res.status).toBeLessThan(300);
    } else {
      expect(res.status).toBe(403);
      expect(res.body.type).toBe('http://fleet.test/errors/forbidden');
    }
  });
});

test('public routes need no token', async () => {
  for (const path of ['/healthz', '/errors', '/errors/not-found', '/metrics']) {
    expect((await t.call('GET', path)).status).toBe(200);
  }
});

describe('tenant isolation', () => {
  test('each tenant sees only its own tenant object', async () => {
    const acme = await t.call('GET', '/api/tenant', { token: await t.token('acme.viewer') });
    expect(acme.body.id).toBe('acme');
    const mine = await t.call('GET', '/api/tenant', { token: await t.token('default.viewer') });
    expect(mine.body.id).toBe('default');
  });

  test("another tenant's object is 404, never 403", async () => {
    const created = await t.call('POST', '/api/pats', {
      token: await t.token('default.admin'),
      body: { name: 'isolated', role: 'viewer' },
    });
    expect(created.status).toBe(201);
    const acmeAdmin = await t.token('acme.admin');
    const read = await t.call('GET', `/api/pats/${created.body.id}`, { token: acmeAdmin });
    expect(read.status).toBe(404);
    expect(read.body.type).toBe('http://fleet.test/errors/not-found');
    const revoke = await t.call('POST', `/api/pats/${created.body.id}/revoke`, { token: acmeAdmin });
    expect(revoke.status).toBe(404);
    const list = await t.call('GET', '/api/pats', { token: acmeAdmin });
    expect(list.body.items.map((p: { id: string }) => p.id)).not.toContain(created.body.id);
    // still usable in its own tenant
    expect((await t.call('GET', '/api/tenant', { token: created.body.token })).body.id).toBe('default');
  });
});
