import { randomBytes, randomUUID } from 'node:crypto';
import { sealPeerCredential } from '../../domain/federation/peer-credentials';
import { decrypt } from '../../platform/secrets';
import { SERVICE_VERSION } from '../../platform/version';
import { OUTBOUND_UNREACHABLE } from '../../platform/outbound';
import { eventually } from '../support/eventually';
import { testOutbound } from '../support/outbound';
import { pair, startInstallation, type Installation } from '../support/federation';

const ERRORS = 'http://fleet.test/errors';

let a: Installation;
let b: Installation;
beforeAll(async () => {
  [a, b] = await Promise.all([
    startInstallation('alpha', {
      apiEnv: { Federation__HealthCheckSeconds: '1' },
      apiOutbound: testOutbound(),
      workerOutbound: testOutbound(),
    }),
    startInstallation('bravo'),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const events = (inst: Installation, type: string, subject: string) =>
  inst.t.database.db('events').where({ type, subject }).orderBy('seq');

/** A peer PAT of `inst` (as its admin issues one through the API). */
async function peerPat(inst: Installation, name: string): Promise<{ id: string; token: string }> {
  const res = await inst.t.call('POST', '/api/pats', { token: inst.admin, body: { name, role: 'peer' } });
  expect(res.status).toBe(201);
  return { id: res.body.id, token: res.body.token };
}

/** Pairs A with B under `name` (pair() names B's PAT after A, so it pairs the two once). */
async function pairAs(name: string): Promise<string> {
  const res = await createPeer({ name, baseUrl: b.t.baseUrl, credential: (await peerPat(b, `for-${name}`)).token });
  expect(res.status).toBe(201);
  return res.body.id as string;
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
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{8}\.[\w-]{16}"$/);
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

  test('a peer at the metadata address or in a private network is refused before any connection, in the words of a peer that is down', async () => {
    const { token } = await peerPat(b, 'aimed-inside');
    const peers = {
      metadata: 'https://metadata.test',
      intranet: 'https://intranet.test:8443',
      closed: 'http://127.0.0.1:9',
      unknown: 'https://nowhere.test',
    };
    for (const [name, baseUrl] of Object.entries(peers)) {
      const res = await createPeer({ name: `aimed-${name}`, baseUrl, credential: token });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ healthy: false, remote: null });
      expect(res.body.lastError).toBe(`peer 'aimed-${name}': ${OUTBOUND_UNREACHABLE}`);
    }
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

describe('validation and access', () => {
  let credential: string;
  beforeAll(async () => {
    credential = (await peerPat(b, 'validation')).token;
  });

  test.each([
    [{ baseUrl: 'fleet.example.com' }, 'body.baseUrl'],
    [{ baseUrl: 'ftp://fleet.example.com' }, 'body.baseUrl'],
    [{ baseUrl: 'https://user:pw@fleet.example.com' }, 'body.baseUrl'],
    [{ baseUrl: 'https://fleet.example.com/?x=1' }, 'body.baseUrl'],
    [{ baseUrl: 'https://fleet.example.com/#top' }, 'body.baseUrl'],
    [{ baseUrl: 'https://fleet.example.com/api' }, 'body.baseUrl'],
    [{ baseUrl: 'https://fleet example.com' }, 'body.baseUrl'],
    [{ credential: 'svc-pat.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaa' }, 'body.credential'],
    [{ credential: 'ghp_not-a-pat' }, 'body.credential'],
    [{ credential: undefined }, 'body.credential'],
    [{ name: '' }, 'body.name'],
    [{ name: 'tab\there' }, 'body.name'],
    [{ extra: true }, 'body'],
  ])('%j is 400 naming %s, never quoting the credential', async (change, path) => {
    const body = { name: 'v', baseUrl: 'https://fleet.example.com', credential, ...change };
    const res = await createPeer(body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${ERRORS}/validation-failed`);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(JSON.stringify(res.body)).not.toContain(credential);
  });

  test('plain http to a host that is not loopback is refused in Production (the PAT would cross a network in clear)', async () => {
    const res = await createPeer({ name: 'clear', baseUrl: 'http://fleet.example.com', credential });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'body.baseUrl', message: expect.stringMatching(/https/) }]);
  });

  test('a viewer lists and reads peers but cannot create, change or delete one (403); an operator cannot create either', async () => {
    const id = await pairAs('viewed');
    const viewer = await a.t.token('default.viewer');
    expect((await a.t.call('GET', '/api/federation/peers', { token: viewer })).status).toBe(200);
    expect((await a.t.call('GET', `/api/federation/peers/${id}`, { token: viewer })).status).toBe(200);
    const body = { name: 'x', baseUrl: b.t.baseUrl, credential };
    expect((await createPeer(body, viewer)).status).toBe(403);
    expect((await createPeer(body, a.operator)).status).toBe(403);
    expect((await a.t.call('PUT', `/api/federation/peers/${id}`, { token: viewer, body })).status).toBe(403);
    expect((await a.t.call('DELETE', `/api/federation/peers/${id}`, { token: viewer })).status).toBe(403);
  });

  test("another tenant's peer is 404 (read, change, delete), and its list does not show it", async () => {
    const id = await pairAs('tenant-bound');
    const acme = await a.t.token('acme.admin');
    expect((await a.t.call('GET', `/api/federation/peers/${id}`, { token: acme })).status).toBe(404);
    const body = { name: 'stolen', baseUrl: b.t.baseUrl };
    expect((await a.t.call('PUT', `/api/federation/peers/${id}`, { token: acme, body })).status).toBe(404);
    expect((await a.t.call('DELETE', `/api/federation/peers/${id}`, { token: acme })).status).toBe(404);
    const list = await a.t.call('GET', '/api/federation/peers', { token: acme });
    expect(list.body.items.map((p: { id: string }) => p.id)).not.toContain(id);
  });

  test('an unknown id is 404, a malformed one 400', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await a.t.call('GET', `/api/federation/peers/${unknown}`, { token: a.admin });
    expect(res.status).toBe(404);
    expect(res.body.type).toBe(`${ERRORS}/not-found`);
    expect((await a.t.call('GET', '/api/federation/peers/nope', { token: a.admin })).status).toBe(400);
  });

  test('names are unique per tenant (409)', async () => {
    await pairAs('twice');
    const res = await createPeer({ name: 'twice', baseUrl: b.t.baseUrl, credential });
    expect(res.status).toBe(409);
    expect(res.body.type).toBe(`${ERRORS}/conflict`);
  });

  test('the list pages with limit and cursor, X-Total-Count and Link', async () => {
    const acme = await a.t.token('acme.admin');
    for (const name of ['p1', 'p2', 'p3']) {
      const res = await createPeer({ name, baseUrl: b.t.baseUrl, credential }, acme);
      expect(res.status).toBe(201);
    }
    const first = await a.t.call('GET', '/api/federation/peers?limit=2', { token: acme });
    expect(first.headers.get('x-total-count')).toBe('3');
    expect(first.body.items.map((p: { name: string }) => p.name)).toEqual(['p1', 'p2']);
    expect(first.headers.get('link')).toContain(`cursor=${first.body.nextCursor}`);
    const second = await a.t.call('GET', `/api/federation/peers?limit=2&cursor=${first.body.nextCursor}`, {
      token: acme,
    });
    expect(second.body.items.map((p: { name: string }) => p.name)).toEqual(['p3']);
    expect(second.body.nextCursor).toBeNull();
    expect((await a.t.call('GET', '/api/federation/peers?cursor=bogus', { token: acme })).status).toBe(400);
  });
});

describe('changing and deleting a peer', () => {
  test('PUT renames and keeps the credential on the same origin; If-Match guards it (412), and the new ETag comes back', async () => {
    const id = await pairAs('to-rename');
    const got = await a.t.call('GET', `/api/federation/peers/${id}`, { token: a.admin });
    const etag = got.headers.get('etag')!;
    const res = await a.t.call('PUT', `/api/federation/peers/${id}`, {
      token: a.admin,
      headers: { 'if-match': etag },
      body: { name: 'renamed', baseUrl: b.t.baseUrl },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, name: 'renamed', healthy: true, lastError: null });
    expect(res.headers.get('etag')).not.toBe(etag);
    const stale = await a.t.call('PUT', `/api/federation/peers/${id}`, {
      token: a.admin,
      headers: { 'if-match': etag },
      body: { name: 'again', baseUrl: b.t.baseUrl },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toBe(`${ERRORS}/precondition-failed`);
    const staleDelete = await a.t.call('DELETE', `/api/federation/peers/${id}`, {
      token: a.admin,
      headers: { 'if-match': etag },
    });
    expect(staleDelete.status).toBe(412);
    expect(await events(a, 'federation.peer.updated', id)).toHaveLength(1);
  });

  test('PUT to another origin without a credential is 409: a stored credential never follows the URL', async () => {
    const id = await pairAs('moving');
    const res = await a.t.call('PUT', `/api/federation/peers/${id}`, {
      token: a.admin,
      body: { name: 'moving', baseUrl: 'http://127.0.0.1:9' },
    });
    expect(res.status).toBe(409);
    expect(res.body.errors).toEqual([{ path: 'body.credential', message: expect.stringMatching(/another origin/) }]);
    // With a credential it moves; the new address does not answer, so what the old one said is forgotten.
    const moved = await a.t.call('PUT', `/api/federation/peers/${id}`, {
      token: a.admin,
      body: { name: 'moving', baseUrl: 'http://127.0.0.1:9', credential: (await peerPat(b, 'moving-2')).token },
    });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ baseUrl: 'http://127.0.0.1:9', healthy: false, lastSeenAt: null, remote: null });
    const changed = await events(a, 'federation.peer.health-changed', id);
    expect(changed.map((e) => e.data.healthy)).toEqual([false]);
  });

  test('DELETE unpairs: 204, gone, with its event', async () => {
    const id = await pairAs('to-delete');
    const res = await a.t.call('DELETE', `/api/federation/peers/${id}`, { token: a.admin });
    expect(res.status).toBe(204);
    expect((await a.t.call('GET', `/api/federation/peers/${id}`, { token: a.admin })).status).toBe(404);
    const deleted = await events(a, 'federation.peer.deleted', id);
    expect(deleted).toHaveLength(1);
    expect(deleted[0].data).toEqual({ id, name: 'to-delete', baseUrl: b.t.baseUrl });
    expect((await a.t.call('DELETE', `/api/federation/peers/${id}`, { token: a.admin })).status).toBe(404);
  });
});

describe('periodic health check (every second on alpha)', () => {
  const peer = (id: string) => a.t.call('GET', `/api/federation/peers/${id}`, { token: a.admin });

  test('a revoked credential turns the peer unhealthy (with the 401), a new one via PUT healthy again, and the checks keep it so', async () => {
    const issued = await peerPat(b, 'revocable');
    const created = await createPeer({ name: 'revocable', baseUrl: b.t.baseUrl, credential: issued.token });
    const id = created.body.id as string;
    expect(created.body.healthy).toBe(true);
    expect((await b.t.call('POST', `/api/pats/${issued.id}/revoke`, { token: b.admin })).status).toBe(200);

    const down = await eventually(async () => {
      const res = await peer(id);
      expect(res.body.healthy).toBe(false);
      return res.body;
    }, 20_000);
    expect(down.lastError).toMatch(/401.*revoked/);
    expect(Date.parse(down.lastSeenAt)).toBeLessThan(Date.parse(down.lastPingAt)); // the last answer, not this ping
    expect(down.remote).toEqual(created.body.remote); // still who it said it was
    const flips = await events(a, 'federation.peer.health-changed', id);
    expect(flips.map((e) => e.data)).toEqual([{ id, name: 'revocable', healthy: false, error: down.lastError }]);

    const renewed = await a.t.call('PUT', `/api/federation/peers/${id}`, {
      token: a.admin,
      body: { name: 'revocable', baseUrl: b.t.baseUrl, credential: (await peerPat(b, 'renewed')).token },
    });
    expect(renewed.body).toMatchObject({ healthy: true, lastError: null });
    // The next checks ping with the new credential and keep it healthy, without another flip.
    await eventually(async () => {
      const res = await peer(id);
      expect(Date.parse(res.body.lastSeenAt)).toBeGreaterThan(Date.parse(renewed.body.lastSeenAt));
      expect(res.body.healthy).toBe(true);
    }, 20_000);
    expect((await events(a, 'federation.peer.health-changed', id)).map((e) => e.data.healthy)).toEqual([false, true]);
    // Health is not an operator's change: the row version stays, so the ETag's version part,
    // and its digest part moves with what the checks recorded (a revalidation sees it).
    const checked = (await peer(id)).headers.get('etag')!;
    expect(checked.split('.')[0]).toBe(renewed.headers.get('etag')!.split('.')[0]);
    expect(checked).not.toBe(renewed.headers.get('etag'));
  });

  test('a credential that no longer opens (the key changed) makes that peer unhealthy, saying so; the others are still checked; PUT asks for it again', async () => {
    const rekeyed = await pairAs('rekeyed');
    const steady = await pairAs('steady');
    // As if Secrets:EncryptionKey had changed since it was stored.
    const token = (await peerPat(b, 'rekeyed-old')).token;
    const changedAt = Date.now();
    await a.t.database
      .db('federation_peers')
      .where({ id: rekeyed })
      .update(sealPeerCredential(randomBytes(32), rekeyed, token));
    const down = await eventually(async () => {
      const res = await peer(rekeyed);
      expect(res.body.healthy).toBe(false);
      return res.body;
    }, 20_000);
    expect(down.lastError).toMatch(/no longer opens with Secrets:EncryptionKey/);
    await eventually(async () => {
      const res = await peer(steady);
      expect(Date.parse(res.body.lastSeenAt)).toBeGreaterThan(changedAt);
      expect(res.body.healthy).toBe(true);
    }, 20_000);

    const kept = await a.t.call('PUT', `/api/federation/peers/${rekeyed}`, {
      token: a.admin,
      body: { name: 'rekeyed', baseUrl: b.t.baseUrl },
    });
    expect(kept.status).toBe(409);
    expect(kept.body.errors).toEqual([{ path: 'body.credential', message: expect.stringMatching(/no longer opens/) }]);
    const renewed = await a.t.call('PUT', `/api/federation/peers/${rekeyed}`, {
      token: a.admin,
      body: { name: 'rekeyed', baseUrl: b.t.baseUrl, credential: (await peerPat(b, 'rekeyed-new')).token },
    });
    expect(renewed.body).toMatchObject({ healthy: true, lastError: null });
  });

  test('a peer whose installation is gone turns unhealthy: could not be reached', async () => {
    const c = await startInstallation('charlie');
    let id: string;
    try {
      id = await pair(a, c);
      expect((await peer(id)).body.healthy).toBe(true);
    } finally {
      await c.close();
    }
    const down = await eventually(async () => {
      const res = await peer(id);
      expect(res.body.healthy).toBe(false);
      return res.body;
    }, 20_000);
    expect(down.lastError).toMatch(/could not be reached/);
    expect(await events(a, 'federation.peer.health-changed', id)).toHaveLength(1);
  });
});

describe("a peer's groups (to choose a federated rollout's target there)", () => {
  test('A reads B’s live groups by name, searched and cut at limit; a viewer may; bad queries are 400', async () => {
    const id = await pairAs('groups-of-bravo');
    const create = async (name: string) =>
      (await b.t.call('POST', '/api/groups', { token: b.operator, body: { name } })).body.id as string;
    const [euId, usId] = [await create('web-eu'), await create('web-us')];
    const gone = await create('web-gone');
    expect((await b.t.call('DELETE', `/api/groups/${gone}`, { token: b.operator })).status).toBe(204);

    const viewer = await a.t.token('default.viewer');
    const groups = (query: string) => a.t.call('GET', `/api/federation/peers/${id}/groups${query}`, { token: viewer });
    const web = await groups('?q=WEB-');
    expect(web.status).toBe(200);
    expect(web.body).toEqual({
      items: [
        { id: euId, name: 'web-eu', memberCount: 0 },
        { id: usId, name: 'web-us', memberCount: 0 },
      ],
      more: false,
    });
    expect((await groups('?q=web-&limit=1')).body).toEqual({ items: [web.body.items[0]], more: true });
    expect((await groups('')).body.items.map((g: { name: string }) => g.name)).toContain('default');

    for (const query of ['?limit=0', '?limit=201', '?limit=1.5', '?q=', '?other=1']) {
      expect({ query, status: (await groups(query)).status }).toEqual({ query, status: 400 });
    }
    expect((await a.t.call('GET', `/api/federation/peers/${randomUUID()}/groups`, { token: viewer })).status).toBe(404);
    // B answers only callers with federate: its own operator is refused.
    expect((await b.t.call('GET', '/api/federation/inventory/groups', { token: b.operator })).status).toBe(403);
  });

  test('a peer that refuses (its PAT revoked) is 503 naming it, with its problem', async () => {
    const issued = await peerPat(b, 'groups-revoked');
    const created = await createPeer({ name: 'groups-revoked', baseUrl: b.t.baseUrl, credential: issued.token });
    expect((await b.t.call('POST', `/api/pats/${issued.id}/revoke`, { token: b.admin })).status).toBe(200);
    const res = await a.t.call('GET', `/api/federation/peers/${created.body.id}/groups`, { token: a.admin });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      type: `${ERRORS}/unavailable`,
      installation: 'groups-revoked',
      peerId: created.body.id,
      peerProblem: { status: 401 },
    });
    expect(res.body.detail).toMatch(/^Peer 'groups-revoked' could not be asked: /);
  });
});
