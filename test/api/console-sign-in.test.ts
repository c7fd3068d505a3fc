/**
 * The console's sign-in (the api as the backend for the frontend) against the suite's real
 * OIDC issuer: authorization code + PKCE, a session in Postgres behind an httpOnly cookie,
 * CSRF protection on the cookie's writes, logout and expiry.
 */
import { startTestApp, type TestApp } from '../support/app';
import { browserCall, signInToConsole, startSignIn, CookieJar } from '../support/console-sign-in';
import { eventually } from '../support/eventually';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

test('a demo admin signs in: an httpOnly session cookie, who they are, and the page they started from', async () => {
  const jar = new CookieJar();
  // Reached by another name than Http:PublicBaseUrl's (here its loopback address), the sign-in
  // first moves the browser there, once, before any cookie: the provider sends it back there.
  const elsewhere = await fetch(
    `${t.baseUrl}/api/auth/login?returnTo=${encodeURIComponent('/rollouts?state=running')}`,
    {
      redirect: 'manual',
    },
  );
  expect(elsewhere.status).toBe(302);
  expect(elsewhere.headers.get('location')).toBe(
    `http://fleet.test/api/auth/login?returnTo=${encodeURIComponent('/rollouts?state=running')}&moved=1`,
  );
  expect(elsewhere.headers.getSetCookie()).toEqual([]);
  const login = await startSignIn(t, new CookieJar(), '/rollouts?state=running');
  expect(login.status).toBe(302);
  const provider = new URL(login.headers.get('location')!);
  expect(provider.searchParams.get('code_challenge_method')).toBe('S256');
  expect(provider.searchParams.get('client_id')).toBe('fleet-console');
  jar.take(login);
  expect(login.headers.getSetCookie().join()).toMatch(/fleet_sign_in=.*httponly/i);

  const browser = await signInToConsole(t, 'alice', '/rollouts?state=running');
  expect(browser.landedOn).toBe('/rollouts?state=running');
  const session = await browserCall(t, browser, 'GET', '/api/auth/session');
  expect(session.status).toBe(200);
  expect(session.body).toMatchObject({
    subject: 'alice',
    displayName: 'Alice (admin)',
    tenantId: 'default',
    roles: ['admin'],
  });
  expect(session.body.csrfToken).toEqual(expect.any(String));
});

test("the session reads the API with the person's role, and the audit trail names them", async () => {
  const browser = await signInToConsole(t, 'olivia');
  expect((await browserCall(t, browser, 'GET', '/api/groups')).status).toBe(200);
  const created = await browserCall(t, browser, 'POST', '/api/groups', { body: { name: 'made-in-the-console' } });
  expect(created.status).toBe(201);
  const row = await t.database.db('audit_calls').where({ method: 'POST', path: '/api/groups', status: 201 }).first();
  expect(row).toMatchObject({ actor_type: 'session', actor: 'olivia' });
  // An operator may not read the audit log, through the console either.
  expect((await browserCall(t, browser, 'GET', '/api/audit/events')).status).toBe(403);
});

test('a write with the cookie but without the CSRF token, or from another origin, is refused and changes nothing', async () => {
  const browser = await signInToConsole(t, 'bob');
  const forged = await browserCall(t, browser, 'POST', '/api/groups', { body: { name: 'forged' }, csrf: false });
  expect(forged.status).toBe(403);
  expect(forged.body.detail).toMatch(/CSRF/);
  const wrong = await browserCall(t, browser, 'POST', '/api/groups', {
    body: { name: 'forged' },
    headers: { 'x-csrf-token': `${browser.csrfToken.slice(0, -2)}xx` },
    csrf: false,
  });
  expect(wrong.status).toBe(403);
  const elsewhere = await browserCall(t, browser, 'POST', '/api/groups', {
    body: { name: 'forged' },
    headers: { origin: 'https://evil.example' },
  });
  expect(elsewhere.status).toBe(403);
  expect(await t.database.db('groups').where({ name: 'forged' }).first()).toBeUndefined();
  // Each refusal is the session person's, in their tenant, as a role's refusal is.
  await eventually(async () => {
    const refused = await t.database.db('audit_calls').where({ method: 'POST', path: '/api/groups', status: 403 });
    expect(refused.filter((row) => row.actor === 'bob')).toHaveLength(3);
    expect(refused.filter((row) => row.actor === 'bob')).toEqual(
      Array(3).fill(expect.objectContaining({ tenant_id: 'default', actor_type: 'session', actor_id: 'bob' })),
    );
  });
});

test('a viewer sees but may not change, through the console as through the API', async () => {
  const browser = await signInToConsole(t, 'victor');
  expect((await browserCall(t, browser, 'GET', '/api/configurations')).status).toBe(200);
  expect((await browserCall(t, browser, 'POST', '/api/groups', { body: { name: 'viewer-made' } })).status).toBe(403);
});

test('logout ends the session on every replica: the cookie no longer works', async () => {
  const replica = await startTestApp({}, { replicaOf: t });
  try {
    const browser = await signInToConsole(t, 'audrey');
    expect((await browserCall(replica, browser, 'GET', '/api/audit/events')).status).toBe(200);
    const out = await browserCall(t, browser, 'POST', '/api/auth/logout');
    expect(out.status).toBe(200);
    expect((await browserCall(replica, browser, 'GET', '/api/auth/session')).status).toBe(401);
    expect((await browserCall(t, browser, 'GET', '/api/groups')).status).toBe(401);
  } finally {
    await replica.close();
  }
});

test('an expired or idle session is refused', async () => {
  const expired = await signInToConsole(t, 'alice');
  const idle = await signInToConsole(t, 'bob');
  await t.database
    .db('console_sessions')
    .where({ subject: 'alice' })
    .update({ expires_at: new Date(Date.now() - 1000) });
  await t.database
    .db('console_sessions')
    .where({ subject: 'bob' })
    .update({ last_seen_at: new Date(Date.now() - 2 * 3_600_000) });
  await eventually(async () => expect((await browserCall(t, expired, 'GET', '/api/groups')).status).toBe(401));
  expect((await browserCall(t, idle, 'GET', '/api/groups')).status).toBe(401);
});

test('sign-in inputs are checked: another site as returnTo, a callback with no sign-in in progress, a forged state', async () => {
  for (const returnTo of ['//evil.example/x', 'https://evil.example', '/\\evil.example', 'relative']) {
    const res = await t.call('GET', `/api/auth/login?returnTo=${encodeURIComponent(returnTo)}`);
    expect(res.status).toBe(400);
  }
  const noAttempt = await t.call('GET', '/api/auth/callback?code=abc&state=def');
  expect(noAttempt.status).toBe(401);
  expect(noAttempt.body.detail).toMatch(/No sign-in is in progress/);

  const jar = new CookieJar();
  await startSignIn(t, jar);
  const forged = await fetch(`${t.baseUrl}/api/auth/callback?code=abc&state=not-the-one`, {
    headers: { cookie: jar.header() },
    redirect: 'manual',
  });
  expect(forged.status).toBe(401);
  expect(forged.headers.getSetCookie().join()).not.toMatch(/fleet_session=[^;]/);
});

test('a bearer token still works, and a bad one is not rescued by a session cookie', async () => {
  const browser = await signInToConsole(t, 'alice');
  const res = await fetch(`${t.baseUrl}/api/groups`, {
    headers: { cookie: browser.jar.header(), authorization: 'Bearer not-a-token' },
  });
  expect(res.status).toBe(401);
  const operator = await t.token('default.operator');
  expect((await t.call('GET', '/api/groups', { token: operator })).status).toBe(200);
});
