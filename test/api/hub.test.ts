/**
 * The live-updates hub with real WebSocket clients against two api replicas on one
 * Postgres: fan-out across replicas, replay with `since`, tenants, tokens, bad messages and
 * a consumer that stops reading. And `GET /api/events`, its polling twin.
 */
import WebSocket from 'ws';
import { textOf } from '../../api/hub/hub';
import { HUB_LIMITS } from '../../api/hub/limits';
import { emitEvents } from '../../db/repos/events';
import { HubRefusedError, LiveUpdatesClient, type CloudEvent } from '../../scripts/live-updates/client';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { testInfra } from '../support/infra-env';
import { fetchToken } from '../../scripts/infra/oidc-tokens';

let a: TestApp;
let b: TestApp;
let admin: string;
const clients: LiveUpdatesClient[] = [];

beforeAll(async () => {
  // A 64 KiB allowance, so the slow consumer test needs a few megabytes, not hundreds.
  a = await startTestApp({ Events__SubscriberBufferBytes: String(64 * 1024) });
  b = await startTestApp({ Events__SubscriberBufferBytes: String(64 * 1024) }, { replicaOf: a });
  admin = await a.pat('admin');
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await b?.close();
  await a?.close();
});

async function connect(app: TestApp, token: string, options?: { tokenInQuery?: boolean }) {
  const client = await LiveUpdatesClient.connect(app.baseUrl, token, options);
  clients.push(client);
  return client;
}

async function createGroup(app: TestApp, token: string, name = `g-${Math.random().toString(36).slice(2, 10)}`) {
  const created = await app.call('POST', '/api/groups', { token, body: { name } });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

const typesOf = (events: CloudEvent[]) => events.map((event) => `${event.type} ${event.subject}`);

test('an upgrade without a valid token is refused with a problem before any WebSocket exists', async () => {
  const missing = await LiveUpdatesClient.connect(a.baseUrl, '').catch((error: unknown) => error);
  expect(missing).toBeInstanceOf(HubRefusedError);
  expect((missing as HubRefusedError).status).toBe(401);
  expect((missing as HubRefusedError).problem).toMatchObject({ status: 401, instance: '/hubs/live-updates' });
  const forged = await LiveUpdatesClient.connect(a.baseUrl, 'svc-pat.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaa').catch(
    (error: unknown) => error,
  );
  expect((forged as HubRefusedError).status).toBe(401);
});

test('a PAT limited to endpoints must name the hub; the token may come as access_token', async () => {
  const limited = await a.pat('viewer', { allowedEndpoints: ['GET /api/groups'] });
  const refused = await LiveUpdatesClient.connect(a.baseUrl, limited).catch((error: unknown) => error);
  expect((refused as HubRefusedError).status).toBe(403);
  expect((refused as HubRefusedError).problem).toMatchObject({ type: expect.stringMatching(/endpoint-not-allowed$/) });

  const named = await a.pat('viewer', { allowedEndpoints: ['GET /hubs/live-updates'] });
  const client = await connect(a, named, { tokenInQuery: true });
  expect(await client.ping()).toEqual({ type: 'pong' });
});

test('an event produced through replica A reaches a subscriber on replica B, in order', async () => {
  const client = await connect(b, admin);
  await client.subscribe(['group.*']);
  const id = await createGroup(a, admin);
  const renamed = await a.call('GET', `/api/groups/${id}`, { token: admin });
  const updated = await a.call('PUT', `/api/groups/${id}`, {
    token: admin,
    body: { name: `${renamed.body.name}-x` },
    headers: { 'if-match': renamed.headers.get('etag')! },
  });
  expect(updated.status).toBe(200);
  await eventually(async () => expect(typesOf(client.events)).toEqual([`group.created ${id}`, `group.updated ${id}`]));
  expect(client.events[0]).toMatchObject({ specversion: '1.0', source: expect.any(String), tenant: 'default' });
});

test('every subscriber gets a stream of commits whole, in commit order, each event once', async () => {
  const subscribers = await Promise.all(Array.from({ length: 5 }, () => connect(b, admin)));
  await Promise.all(subscribers.map((client) => client.subscribe(['configuration.*'])));
  const stream = `stream-${Math.random().toString(36).slice(2, 10)}`;
  // Several events to a commit and commits close together, so the replica sends some in one
  // write; frames with 7- and 16-bit lengths and multi-byte text; 45 KB in all, within the
  // 64 KiB allowance however the replica batches them.
  const sizes = [10, 200, 2_000];
  const sent: string[] = [];
  for (let commit = 0; commit < 10; commit++) {
    const events = sizes.map((size, i) => ({
      tenantId: 'default',
      type: 'configuration.updated' as const,
      source: '/test',
      subject: `${stream}-${commit}-${i}`,
      data: { text: 'é'.repeat(size) },
    }));
    await a.database.db.transaction((trx) => emitEvents(trx, events));
    sent.push(...events.map((event) => event.subject));
  }
  const mine = (client: LiveUpdatesClient) => client.events.filter((event) => event.subject?.startsWith(stream));
  for (const client of subscribers) {
    await eventually(async () => expect(mine(client).map((event) => event.subject)).toEqual(sent), 30_000);
    expect(mine(client).map((event) => event.data.text)).toEqual(sent.map((_, i) => 'é'.repeat(sizes[i % 3]!)));
  }
  await Promise.all(subscribers.map((client) => client.close()));
}, 60_000);

test('a reconnect with since gets exactly the events it missed, then live ones', async () => {
  const first = await connect(a, admin);
  await first.subscribe(['group.created']);
  const seen = await createGroup(a, admin);
  await eventually(async () => expect(typesOf(first.events)).toEqual([`group.created ${seen}`]));
  await first.close();

  const missed = [await createGroup(b, admin), await createGroup(a, admin)];
  const second = await connect(b, admin);
  await second.subscribe(['group.created'], { since: first.lastEventId });
  const live = await createGroup(a, admin);
  await eventually(async () =>
    expect(typesOf(second.events)).toEqual([...missed, live].map((id) => `group.created ${id}`)),
  );
});

test('a since the hub does not know, or from another tenant, answers an error saying so', async () => {
  const client = await connect(a, admin);
  await expect(client.subscribe(['*'], { since: '00000000-0000-4000-8000-000000000000' })).rejects.toMatchObject({
    code: 'since-unknown',
  });
  const otherTenant = await a.pat('admin', { tenant: 'hub-other' });
  await createGroup(a, otherTenant);
  const [theirs] = await a.database.db('events').where({ tenant_id: 'hub-other' }).select('id');
  await expect(client.subscribe(['*'], { since: theirs.id })).rejects.toMatchObject({ code: 'since-unknown' });
});

test('a subscriber never sees another tenant’s events; a subject filter narrows to one object', async () => {
  const tenantB = await a.pat('admin', { tenant: 'hub-b' });
  const everything = await connect(a, tenantB);
  await everything.subscribe(['*']);
  const one = await connect(b, admin);
  const mine = await createGroup(a, admin);
  await one.subscribe(['group.*'], { subject: mine });

  await createGroup(a, admin); // tenant default, another group
  const theirs = await createGroup(a, tenantB);
  await a.call('DELETE', `/api/groups/${mine}`, { token: admin });
  // The group's creation may still be in flight to replica B when the subscription arrives
  // (live delivery starts with what the replica fans out next): what counts is that only
  // this group's events come.
  await eventually(async () => expect(typesOf(one.events)).toContain(`group.deleted ${mine}`));
  expect(one.events.every((event) => event.subject === mine)).toBe(true);
  await eventually(async () => expect(typesOf(everything.events)).toEqual([`group.created ${theirs}`]));
  expect(everything.events.every((event) => event.tenant === 'hub-b')).toBe(true);
});

test('PAT events reach admins only, on the hub and through GET /api/events', async () => {
  const viewer = await a.pat('viewer');
  const watching = await connect(a, viewer);
  await watching.subscribe(['*']);
  const adminClient = await connect(a, admin);
  await adminClient.subscribe(['pat.*', 'group.created']);

  const pat = await a.call('POST', '/api/pats', { token: admin, body: { name: `p-${Date.now()}`, role: 'viewer' } });
  expect(pat.status).toBe(201);
  const group = await createGroup(a, admin);
  await eventually(async () => expect(typesOf(adminClient.events)).toContain(`pat.created ${pat.body.id}`));
  await eventually(async () => expect(typesOf(watching.events)).toContain(`group.created ${group}`));
  expect(watching.events.some((event) => event.type.startsWith('pat.'))).toBe(false);
  expect(JSON.stringify(adminClient.events)).not.toContain(pat.body.token);

  const polled = await a.call('GET', '/api/events?type=pat.*', { token: viewer });
  expect(polled.status).toBe(200);
  expect(polled.body.items).toEqual([]);
  const asAdmin = await a.call('GET', `/api/events?type=pat.*&subject=${pat.body.id}`, { token: admin });
  expect(asAdmin.body.items.map((e: CloudEvent) => e.type)).toEqual(['pat.created']);
});

test('a revoked PAT’s socket is closed with 4401 on every replica', async () => {
  const created = await a.call('POST', '/api/pats', {
    token: admin,
    body: { name: `revoked-${Date.now()}`, role: 'viewer' },
  });
  const onA = await connect(a, created.body.token);
  const onB = await connect(b, created.body.token);
  await onA.subscribe(['*']);
  await onB.subscribe(['*']);
  expect((await a.call('POST', `/api/pats/${created.body.id}/revoke`, { token: admin })).status).toBe(200);
  expect(await onA.closed).toMatchObject({ code: 4401 });
  expect(await onB.closed).toMatchObject({ code: 4401 });
});

test('an operator’s socket ends with 4401 when the OIDC token it was opened with expires', async () => {
  // The test issuer's tokens for this client live 1 s: on a slow machine one may expire
  // before the upgrade, which is then refused (401), so a fresh one is fetched and tried again.
  const client = await eventually(
    async () => connect(a, await fetchToken(testInfra().oidcIssuer, 'default.expiring')),
    10_000,
  );
  expect(await client.closed).toEqual({ code: 4401, reason: 'the token has expired' });
});

test('garbage client messages get an error, not a crash; the connection stays usable', async () => {
  const client = await connect(a, admin);
  for (const garbage of [
    'not json',
    '{"type":"subscribe"}',
    '{"type":"subscribe","events":["rollot.*"]}',
    '{"type":"subscribe","events":["*"],"since":"yesterday"}',
    '{"type":"fly"}',
    '[]',
    `{"type":"subscribe","events":${JSON.stringify(Array(51).fill('*'))}}`,
  ]) {
    await expect(client.request(garbage)).rejects.toMatchObject({ type: 'error', code: 'bad-message' });
  }
  expect(await client.ping()).toEqual({ type: 'pong' });
});

test('every upgrade is audited: accepted as 101 with its caller, refused with its status (and its caller when known)', async () => {
  const name = `hub-audited-${Math.random().toString(36).slice(2, 8)}`;
  const viewer = await a.pat('viewer', { name });
  const peerName = `${name}-peer`;
  const peer = await a.pat('peer', { name: peerName });
  const client = await connect(a, viewer);
  await expect(connect(a, peer)).rejects.toMatchObject({ status: 403 });
  await expect(connect(a, 'svc-pat.not-a-token')).rejects.toMatchObject({ status: 401 });
  const rows = () => a.database.db('audit_calls').where({ path: '/hubs/live-updates' }).orderBy('seq');
  await eventually(async () => {
    const audited = await rows();
    expect(audited.find((row) => row.actor === name)).toMatchObject({
      tenant_id: 'default',
      actor_type: 'pat',
      method: 'GET',
      route: '/hubs/live-updates',
      status: 101,
      source_address: expect.stringMatching(/127\.0\.0\.1/),
    });
    expect(audited.find((row) => row.actor === peerName)).toMatchObject({ tenant_id: 'default', status: 403 });
    expect(audited.some((row) => row.status === 401 && row.actor_type === 'anonymous')).toBe(true);
  });
  await client.close();
});

describe('what one connection may ask (api/hub/limits.ts)', () => {
  /** A bare socket to the hub and every message it receives, for floods the client would not send. */
  async function rawSocket(app: TestApp, token: string) {
    const ws = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}/hubs/live-updates`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const received: Array<{ type: string; code?: string }> = [];
    ws.on('message', (data) => received.push(JSON.parse(textOf(data)) as { type: string; code?: string }));
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    return { ws, received, closed };
  }

  test('a connection holds at most 100 subscriptions; the next is refused until one is gone', async () => {
    const client = await connect(a, admin);
    for (let i = 0; i < HUB_LIMITS.subscriptions; i++) await client.subscribe(['group.*'], { subject: `g-${i}` });
    await expect(client.subscribe(['group.*'], { subject: 'one-more' })).rejects.toMatchObject({
      type: 'error',
      code: 'too-many-subscriptions',
    });
    await client.unsubscribe(['group.*'], 'g-0');
    await expect(client.subscribe(['group.*'], { subject: 'one-more' })).resolves.toMatchObject({ type: 'subscribed' });
  });

  test(`${HUB_LIMITS.malformed} malformed messages in a row close the connection with 1008`, async () => {
    const { ws, received, closed } = await rawSocket(a, admin);
    for (let i = 0; i < HUB_LIMITS.malformed; i++) ws.send('not json');
    expect(await closed).toBe(1008);
    expect(received.filter((message) => message.code === 'bad-message')).toHaveLength(HUB_LIMITS.malformed - 1);
  });

  test('messages past the rate are dropped and told once; a connection that keeps on is closed with 1008', async () => {
    const over = await rawSocket(a, admin);
    for (let i = 0; i < HUB_LIMITS.burst + 20; i++) over.ws.send('{"type":"ping"}');
    await eventually(async () => expect(over.received.some((message) => message.code === 'rate-limited')).toBe(true));
    const pongs = () => over.received.filter((message) => message.type === 'pong').length;
    expect(pongs()).toBeGreaterThanOrEqual(HUB_LIMITS.burst);
    expect(pongs()).toBeLessThan(HUB_LIMITS.burst + 20);
    expect(over.received.filter((message) => message.code === 'rate-limited')).toHaveLength(1);
    // It slowed down: still open, answered again.
    const before = pongs();
    await eventually(async () => {
      over.ws.send('{"type":"ping"}');
      expect(pongs()).toBeGreaterThan(before);
    });
    over.ws.close();

    const flood = await rawSocket(a, admin);
    for (let i = 0; i < 10_000 && flood.ws.readyState === flood.ws.OPEN; i++) flood.ws.send('{"type":"ping"}');
    expect(await flood.closed).toBe(1008);
    expect(flood.received.filter((message) => message.type === 'pong').length).toBeLessThan(10_000);
  });
});

test('an event larger than the allowance reaches a subscriber that keeps up, live and by replay', async () => {
  const reader = await connect(b, admin);
  let closedWith: number | undefined;
  void reader.closed.then(({ code }) => (closedWith = code));
  await reader.subscribe(['configuration.updated']);
  const subject = `large-${Math.random().toString(36).slice(2, 10)}`;
  const event = (data: Record<string, unknown>) => ({
    tenantId: 'default',
    type: 'configuration.updated' as const,
    source: '/test',
    subject,
    data,
  });
  await emitEvents(a.database.db, [event({ marker: true })]);
  const marker = await eventually(async () => {
    const found = reader.events.find((candidate) => candidate.subject === subject);
    expect(found).toBeDefined();
    return found!;
  });
  const large = 'y'.repeat(100 * 1024); // over the 64 KiB allowance on its own
  await emitEvents(a.database.db, [event({ large })]);
  await eventually(async () => expect(reader.events.filter((e) => e.subject === subject)).toHaveLength(2));
  expect(reader.events.find((e) => e.subject === subject && e.data.large)?.data.large).toBe(large);
  expect(closedWith).toBeUndefined();

  const later = await connect(b, admin);
  await later.subscribe(['configuration.updated'], { since: marker.id, subject });
  await eventually(async () => expect(later.events.map((e) => e.data.large)).toEqual([large]));
  await Promise.all([reader.close(), later.close()]); // the slow-consumer test counts the replica's subscribers
});

test('a consumer that stops reading is cut off with 4008 and forgotten; it resumes with since', async () => {
  const before = b.app.liveSubscribers();
  const slow = await connect(b, admin);
  await slow.subscribe(['configuration.updated']);
  slow.pause();
  const padding = 'x'.repeat(10_000);
  // 4,000 events of 10 KB: 40 MB, far more than loopback's socket buffers (up to 4 + 6 MB
  // with autotuning) and the 64 KiB allowance hold.
  await emitEvents(
    a.database.db,
    Array.from({ length: 4000 }, (_, i) => ({
      tenantId: 'default',
      type: 'configuration.updated' as const,
      source: '/test',
      subject: `c-${i}`,
      data: { padding },
    })),
  );
  // The replica lets go of it (and of what it could not send) while it still reads nothing.
  await eventually(async () => expect(b.app.liveSubscribers()).toBe(before), 30_000);
  slow.resume();
  expect(await slow.closed).toMatchObject({ code: 4008 });
  const resumed = await connect(b, admin);
  await resumed.subscribe(['configuration.updated'], { since: slow.lastEventId });
  // Between them, every event exactly once: the replay goes at the pace the client reads.
  await eventually(async () => expect(slow.events.length + resumed.events.length).toBe(4000), 30_000);
  expect(new Set([...slow.events, ...resumed.events].map((event) => event.subject)).size).toBe(4000);
}, 90_000);

test('GET /api/events pages oldest first, filters by type, subject and after, and refuses bad filters', async () => {
  const group = await createGroup(a, admin);
  await a.call('DELETE', `/api/groups/${group}`, { token: admin });
  const all = await a.call('GET', `/api/events?type=group.*&subject=${group}`, { token: admin });
  expect(all.body.items.map((e: CloudEvent) => e.type)).toEqual(['group.created', 'group.deleted']);
  const after = await a.call('GET', `/api/events?type=group.*&subject=${group}&after=${all.body.items[0].id}`, {
    token: admin,
  });
  expect(after.body.items.map((e: CloudEvent) => e.type)).toEqual(['group.deleted']);
  const paged = await a.call('GET', '/api/events?limit=1', { token: admin });
  expect(paged.headers.get('link')).toMatch(/rel="next"/);

  // Newest first: the latest page at once, the next link going back in time.
  const newest = await a.call('GET', `/api/events?type=group.*&subject=${group}&order=newest&limit=1`, {
    token: admin,
  });
  expect(newest.body.items.map((e: CloudEvent) => e.type)).toEqual(['group.deleted']);
  const next = new URL(/<([^>]+)>; rel="next"/.exec(newest.headers.get('link')!)![1]!);
  const older = await a.call('GET', `${next.pathname}${next.search}`, { token: admin });
  expect(older.body.items.map((e: CloudEvent) => e.type)).toEqual(['group.created']);

  for (const bad of [
    'type=rollot.*',
    'type=a,,b',
    'after=nope',
    'after=00000000-0000-4000-8000-000000000000',
    'order=latest',
  ]) {
    const refused = await a.call('GET', `/api/events?${bad}`, { token: admin });
    expect(refused.status).toBe(400);
  }
});
