import { decrypt } from '../../platform/secrets';
import { SERVICE_VERSION } from '../../platform/version';
import { startInstallation, type Installation } from '../support/federation';

const ERRORS = 'http://fleet.test/errors';

let a: Installation;
let b: Installation;
beforeAll(async () => {
  [a, b] = await Promise.all([
    startInstallation('alpha', { apiEnv: { Federation__HealthCheckSeconds: '1' } }),
    startInstallation('bravo'),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const events = (inst: Installation, type: string, subject: string) =>
  inst.t.database.db('events').where({ type, subject }).orderBy('id');

/** A peer PAT of `inst` (as its admin issues one through the API). */
async function peerPat(inst: Installation, name: string): Promise<{ id: string; token: string }> {
  const res = await inst.t.call('POST', '/api/pats', { token: inst.admin, body: { name, role: 'peer' } });
  expect(res.status).toBe(201);
  return { id: res.body.id, token: res.body.token };
}

async function createPeer(body: Record<string, unknown>, token = a.admin) {
  return a.t.call('POST', '/api/federation/peers', { token, body });
}

describe('ping', () => {
  test("a peer PAT gets this installation's id, name, version and agent endpoint", async () => {
    const { token } = await peerPat(b, 'ping-caller');
    const res = await b.t.call('GET', '/api/federation/ping', { token });
    expect(res.status).toBe(200);
    const installation = await b.t.database.db('installation').first();
    expect(res.body).toEqual({
      installationId: installation.id,
      name: 'bravo',
      version: SERVICE_VERSION,
      agentEndpoint: b.t.settings.federation.agentEndpoint,
    });
    expect(SERVICE_VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  test('an operator cannot ping (federate is for peers and admins); no token is 401', async () => {
    expect((await b.t.call('GET', '/api/federation/ping', { token: b.operator })).status).toBe(403);
    expect((await b.t.call('GET', '/api/federation/ping')).status).toBe(401);
    expect((await b.t.call('GET', '/api/federation/ping', { token: b.admin })).status).toBe(200);
  });

  test('a peer PAT may call federation endpoints only: any other endpoint is 403', async () => {
    const { token } = await peerPat(b, 'confined');
    for (const [method, path, body] of [
      ['GET', '/api/agents', undefined],
      ['POST', '/api/rollouts', { name: 'x' }],
      ['GET', '/api/configurations', undefined],
      ['GET', '/api/tenant', undefined],
      ['POST', '/api/pats', { name: 'escalate', role: 'admin' }],
      ['GET', '/api/federation/peers', undefined],
      ['POST', '/api/federation/peers', { name: 'x', baseUrl: a.t.baseUrl, credential: token }],
    ] as const) {
      const res = await b.t.call(method, path, { token, body });
      expect({ method, path, status: res.status, type: res.body.type }).toEqual({
        method,
        path,
        status: 403,
        type: `${ERRORS}/forbidden`,
      });
    }
    expect((await b.t.call('GET', '/api/federation/ping', { token })).status).toBe(200);
  });
});

describe('pairing', () => {
  test('A pairs with B: created, pinged, healthy, with latency and what B says of itself; the credential is never shown', async () => {
    const { token: credential } = await peerPat(b, 'from-alpha');
    const res = await createPeer({ name: 'bravo', baseUrl: `${b.t.baseUrl}/`, credential });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    expect(res.headers.get('location')).toBe(`/api/federation/peers/${id}`);
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{8,}"$/);
    const bravo = await b.t.database.db('installation').first();
    expect(res.body).toEqual({
      id,
      name: 'bravo',
      baseUrl: b.t.baseUrl,
      healthy: true,
      lastPingAt: expect.any(String),
      lastSeenAt: res.body.lastPingAt,
      latencyMs: expect.any(Number),
      lastError: null,
      remote: {
        installationId: bravo.id,
        name: 'bravo',
        version: SERVICE_VERSION,
        agentEndpoint: b.t.settings.federation.agentEndpoint,
      },
      createdBy: 'default.admin',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(res.body.latencyMs).toBeGreaterThanOrEqual(0);

    const got = await a.t.call('GET', `/api/federation/peers/${id}`, { token: a.admin });
    expect(got.status).toBe(200);
    expect(got.headers.get('etag')).toBe(res.headers.get('etag'));
    const list = await a.t.call('GET', '/api/federation/peers', { token: a.admin });
    expect(list.body.items.map((p: { id: string }) => p.id)).toContain(id);

    // Stored sealed, bound to the peer's id; never in an answer or an event.
    const row = await a.t.database.db('federation_peers').where({ id }).first();
    expect(JSON.stringify(row)).not.toContain(credential.split('.')[1]);
    const opened = decrypt(
      a.t.settings.encryptionKey!,
      { iv: row.credential_iv, tag: row.credential_tag, ciphertext: row.credential_ciphertext },
      `federation-peer:${id}:credential`,
    );
    expect(opened.toString()).toBe(credential);
    const created = await events(a, 'federation.peer.created', id);
    expect(created).toHaveLength(1);
    expect(created[0].data).toMatchObject({ id, name: 'bravo', healthy: true });
    for (const text of [res.body, got.body, list.body, created].map((x) => JSON.stringify(x))) {
      expect(text).not.toContain(credential);
      expect(text).not.toContain(credential.split('.')[1]);
    }
  });

  test('a wrong credential is stored all the same, unhealthy, with the peer’s 401 in lastError', async () => {
    const wrong = await a.t.pat('peer'); // well-formed, but B never issued it
    const res = await createPeer({ name: 'bravo-wrong', baseUrl: b.t.baseUrl, credential: wrong });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ healthy: false, lastSeenAt: null, remote: null });
    expect(res.body.lastError).toContain('401');
    expect(res.body.lastError).toContain('not known');
    expect(res.body.lastError).not.toContain(wrong);
  });

  test('a peer that is down at pairing time is stored, unhealthy, saying it could not be reached', async () => {
    const { token } = await peerPat(b, 'nobody-listens');
    const res = await createPeer({ name: 'nowhere', baseUrl: 'http://127.0.0.1:9', credential: token });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ healthy: false, lastSeenAt: null, remote: null });
    expect(res.body.lastError).toMatch(/could not be reached/);
  });

  test('pairing with yourself is refused (400), and nothing is stored', async () => {
    const own = await a.t.pat('peer');
    const res = await createPeer({ name: 'myself', baseUrl: a.t.baseUrl, credential: own });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${ERRORS}/validation-failed`);
    expect(res.body.errors).toEqual([{ path: 'body.baseUrl', message: expect.stringMatching(/itself/) }]);
    expect(await a.t.database.db('federation_peers').where({ name: 'myself' })).toHaveLength(0);
  });
});
