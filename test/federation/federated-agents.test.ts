import { ensureTenant } from '../../db/repos/tenants';
import { seedAgents } from '../support/agents-seed';
import { pair, startInstallation, type Installation } from '../support/federation';

const ERRORS = 'http://fleet.test/errors';

let a: Installation;
let b: Installation;
let c: Installation;
let cClosed = false;
let bPeer: string;
let cPeer: string;
let bAgents: string[];
let cAgents: string[];
beforeAll(async () => {
  [a, b, c] = await Promise.all([
    startInstallation('alpha', {
      // Checks never run during the tests (a peer closed stays "healthy", so it is asked); calls wait 2 s at most.
      apiEnv: { Federation__HealthCheckSeconds: '3600', Federation__PeerTimeoutSeconds: '2' },
    }),
    startInstallation('bravo'),
    startInstallation('charlie'),
  ]);
  const site = (i: number) => ({ labels: { site: i % 2 === 0 ? 'north' : 'south' } });
  bAgents = await seedAgents(b.t.database.db, 'default', 7, site);
  cAgents = await seedAgents(c.t.database.db, 'default', 5, (i) => ({
    ...site(i),
    status: i < 2 ? 'online' : 'offline',
  }));
  bPeer = await pair(a, b);
  cPeer = await pair(a, c);
}, 90_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), cClosed ? undefined : c?.close()]);
});

interface Item {
  id: string;
  peer: { id: string; name: string };
  [field: string]: unknown;
}

const list = (query: string, token = a.admin) => a.t.call('GET', `/api/federation/agents${query}`, { token });

/** Every page of the list, following nextCursor (and checking Link says the same). */
async function allPages(query: string): Promise<{ pages: Item[][]; peers: unknown[] }> {
  const pages: Item[][] = [];
  const peers: unknown[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? '&' : '?';
    const res = await list(`${query}${cursor ? `${sep}cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    pages.push(res.body.items);
    peers.push(res.body.peers);
    cursor = res.body.nextCursor;
    if (cursor) expect(res.headers.get('link')).toContain(`cursor=${cursor}`);
    else expect(res.headers.get('link')).toBeNull();
    expect(pages.length).toBeLessThan(20);
  } while (cursor);
  return { pages, peers };
}

test('across pages of 3, every agent of both peers comes exactly once, in id order, each with its peer', async () => {
  const { pages, peers } = await allPages('?limit=3');
  expect(pages.slice(0, -1).every((page) => page.length === 3)).toBe(true);
  const items = pages.flat();
  const expected = [
    ...bAgents.map((id) => ({ id, peer: { id: bPeer, name: 'bravo' } })),
    ...cAgents.map((id) => ({ id, peer: { id: cPeer, name: 'charlie' } })),
  ].sort((x, y) => (x.id < y.id ? -1 : 1));
  expect(items.map(({ id, peer }) => ({ id, peer }))).toEqual(expected);
  for (const answer of peers) {
    expect(answer).toEqual([
      { id: bPeer, name: 'bravo', status: 'ok' },
      { id: cPeer, name: 'charlie', status: 'ok' },
    ]);
  }
});

test("each item is the agent as its peer's own list shows it, plus the peer", async () => {
  const res = await list('?limit=1000', await a.t.token('default.viewer'));
  expect(res.status).toBe(200);
  const item = res.body.items.find((agent: Item) => agent.id === bAgents[3]);
  const own = await b.t.call('GET', `/api/agents/${bAgents[3]}`, { token: b.admin });
  expect(item).toEqual({ ...own.body, peer: { id: bPeer, name: 'bravo' } });
});

test('the filters of GET /api/agents are passed on to every peer', async () => {
  const north = (await allPages('?limit=2&label=site:north')).pages.flat();
  const northIds = [...bAgents.filter((_, i) => i % 2 === 0), ...cAgents.filter((_, i) => i % 2 === 0)].sort();
  expect(north.map((agent) => agent.id)).toEqual(northIds);
  const online = (await list('?status=online')).body.items as Item[];
  expect(online.map((agent) => agent.id)).toEqual(cAgents.slice(0, 2).sort());
  const none = await list(`?q=${bAgents[0]!.slice(0, 8)}`);
  expect(none.body.items.map((agent: Item) => agent.id)).toEqual([bAgents[0]]);
});

test.each([
  ['?cursor=bogus', 'query.cursor'],
  [`?cursor=${Buffer.from('{"p":{"x":"y"}}').toString('base64url')}`, 'query.cursor'],
  // Well-formed, but invented: no MAC of this installation's (the positions are plain base64 JSON).
  [`?cursor=${Buffer.from('{"p":{}}').toString('base64url')}`, 'query.cursor'],
  [
    `?cursor=${Buffer.from('{"p":{}}').toString('base64url')}.${Buffer.alloc(32).toString('base64url')}`,
    'query.cursor',
  ],
  ['?limit=0', 'query.limit'],
  ['?limit=1001', 'query.limit'],
  ['?offset=3', 'query'],
  ['?version=2', 'query.version'],
  ['?status=asleep', 'query.status'],
  ['?label=site:north&label=site:south', 'query.label'],
])('%s is 400 naming %s', async (query, path) => {
  const res = await list(query);
  expect(res.status).toBe(400);
  expect(res.body.type).toBe(`${ERRORS}/validation-failed`);
  expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
});

test('the inventory a peer reads needs federate: an operator of the peer gets 403, a peer PAT its agents', async () => {
  expect((await b.t.call('GET', '/api/federation/inventory/agents', { token: b.operator })).status).toBe(403);
  const token = await b.t.pat('peer');
  const res = await b.t.call('GET', `/api/federation/inventory/agents?limit=2&after=${bAgents[0]}`, { token });
  expect(res.status).toBe(200);
  expect(res.body.items.map((agent: Item) => agent.id)).toEqual(
    [...bAgents]
      .sort()
      .filter((id) => id > bAgents[0]!)
      .slice(0, 2),
  );
});

test('an unhealthy peer is skipped and named, the others listed', async () => {
  const dead = await a.t.call('POST', '/api/federation/peers', {
    token: a.admin,
    body: { name: 'delta', baseUrl: 'http://127.0.0.1:9', credential: await b.t.pat('peer') },
  });
  expect(dead.body.healthy).toBe(false);
  try {
    const res = await list('?limit=1000');
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(bAgents.length + cAgents.length);
    expect(res.body.peers).toContainEqual({
      id: dead.body.id,
      name: 'delta',
      status: 'skipped',
      error: expect.stringMatching(/^unhealthy at its last check: .*could not be reached/),
    });
  } finally {
    await a.t.call('DELETE', `/api/federation/peers/${dead.body.id}`, { token: a.admin });
  }
});

test('a peer that refuses (its PAT revoked since its last check) is named failed with its 401; the others are listed', async () => {
  const issued = await b.t.call('POST', '/api/pats', { token: b.admin, body: { name: 'soon-revoked', role: 'peer' } });
  const paired = await a.t.call('POST', '/api/federation/peers', {
    token: a.admin,
    body: { name: 'bravo-again', baseUrl: b.t.baseUrl, credential: issued.body.token },
  });
  expect(paired.body.healthy).toBe(true);
  try {
    expect((await b.t.call('POST', `/api/pats/${issued.body.id}/revoke`, { token: b.admin })).status).toBe(200);
    const res = await list('?limit=1000');
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(bAgents.length + cAgents.length);
    expect(res.body.peers).toContainEqual({
      id: paired.body.id,
      name: 'bravo-again',
      status: 'failed',
      error: expect.stringMatching(/answered 401 .*revoked/),
    });
  } finally {
    await a.t.call('DELETE', `/api/federation/peers/${paired.body.id}`, { token: a.admin });
  }
});

test('a cursor is only what this list issued to this tenant: edited positions, or a cursor of another tenant, are 400', async () => {
  const first = await list('?limit=2');
  const [body, tag] = (first.body.nextCursor as string).split('.');
  const positions = JSON.parse(Buffer.from(body!, 'base64url').toString('utf8'));
  for (const peer of Object.keys(positions.p)) positions.p[peer] = null;
  const edited = `${Buffer.from(JSON.stringify(positions)).toString('base64url')}.${tag}`;
  const refused = await list(`?limit=2&cursor=${edited}`);
  expect(refused.status).toBe(400);
  expect(refused.body.errors).toEqual([{ path: 'query.cursor', message: 'is not a cursor this list issued' }]);

  await ensureTenant(a.t.database.db, 'acme');
  const other = await a.t.token('acme.admin');
  expect((await list(`?limit=2&cursor=${first.body.nextCursor}`, other)).status).toBe(400);
  expect((await list(`?limit=2&cursor=${first.body.nextCursor}`)).status).toBe(200);
});

test('a peer that does not answer in time is named timeout; the others are listed, and the listing goes on without it', async () => {
  // B is slow for real: its agents table is locked, so its inventory query waits.
  const slow = await b.t.database.db.transaction();
  try {
    await slow.raw('LOCK TABLE agents IN ACCESS EXCLUSIVE MODE');
    const res = await list('?limit=1000');
    expect(res.status).toBe(200);
    expect(res.body.items.map((agent: Item) => agent.id)).toEqual([...cAgents].sort());
    expect(res.body.peers).toEqual([
      { id: bPeer, name: 'bravo', status: 'timeout', error: expect.stringMatching(/no answer within 2000 ms/) },
      { id: cPeer, name: 'charlie', status: 'ok' },
    ]);
    // C has no more and B did not answer: this listing is done (no next page that would wait on B).
    expect(res.body.nextCursor).toBeNull();
    await slow.rollback();
    const again = await list('?limit=1000'); // a listing started afresh asks B again
    expect(again.body.items).toHaveLength(bAgents.length + cAgents.length);
    expect(again.body.peers.map((peer: { status: string }) => peer.status)).toEqual(['ok', 'ok']);
  } finally {
    if (!slow.isCompleted()) await slow.rollback();
  }
});

test("one peer down: 200 with the other peer's agents, the down peer named; following the pages never meets an empty one", async () => {
  const first = await list('?limit=2');
  await c.close();
  cClosed = true;
  const res = await list('?limit=1000');
  expect(res.status).toBe(200);
  expect(res.body.items.map((agent: Item) => agent.id)).toEqual([...bAgents].sort());
  expect(res.body.peers).toEqual([
    { id: bPeer, name: 'bravo', status: 'ok' },
    { id: cPeer, name: 'charlie', status: 'unreachable', error: expect.stringMatching(/could not be reached/) },
  ]);
  // Mid-way through the pages too: B's agents after its place, C named once, then left out.
  const next = await list(`?limit=1000&cursor=${first.body.nextCursor}`);
  expect(next.status).toBe(200);
  const bTaken = (first.body.items as Item[]).filter((agent) => agent.peer.name === 'bravo').map((agent) => agent.id);
  const bLeft = [...bAgents].sort().filter((id) => !bTaken.includes(id));
  expect(next.body.items.map((agent: Item) => agent.id)).toEqual(bLeft);
  expect(next.body.peers[1]).toMatchObject({ name: 'charlie', status: 'unreachable' });
  expect(next.body.nextCursor).toBeNull();

  // C is still marked healthy (no health check since it went down): a client following the
  // pages one agent at a time gets one agent a page, every page, and an end.
  const { pages, peers } = await allPages('?limit=1');
  expect(pages.every((page) => page.length === 1)).toBe(true);
  expect(pages.flat().map((agent) => agent.id)).toEqual([...bAgents].sort());
  expect((peers[0] as Array<{ status: string }>)[1]).toMatchObject({ status: 'unreachable' });
  expect((peers[1] as Array<{ status: string; error?: string }>)[1]).toEqual({
    id: cPeer,
    name: 'charlie',
    status: 'skipped',
    error: 'did not answer an earlier page of this listing',
  });
});
