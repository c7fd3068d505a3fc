import { appendAuditCalls, insertAudit, verifyAuditChain, type AuditRecord } from '../../db/repos/audit';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';

let t: TestApp;
let admin: string;
let auditor: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('default.admin');
  auditor = await t.token('default.auditor');
});
afterAll(() => t?.close());

/** The call with this request id as the log stores it, once the trail has written it. */
const storedCall = (requestId: string) =>
  eventually(async () => {
    const call = await t.database.db('audit_calls').where({ request_id: requestId }).first();
    expect(call).toBeDefined();
    return call;
  });

describe('audit trail', () => {
  test('every call is recorded: reads, writes, refusals and unauthenticated attempts', async () => {
    const read = await t.call('GET', '/api/tenant', { token: admin, headers: { 'x-request-id': 'audit-read-1' } });
    const write = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: { displayName: 'audited' },
      headers: { 'x-request-id': 'audit-write-1' },
    });
    const refused = await t.call('PUT', '/api/tenant', {
      token: await t.token('default.viewer'),
      body: { displayName: 'nope' },
      headers: { 'x-request-id': 'audit-refused-1' },
    });
    await t.call('GET', '/api/tenant', { headers: { 'x-request-id': 'audit-anon-1' } });
    expect([read.status, write.status, refused.status]).toEqual([200, 200, 403]);

    const byRequest = async (id: string) =>
      eventually(async () => {
        const res = await t.call('GET', `/api/audit/events?requestId=${id}`, { token: auditor });
        expect(res.body.items).toHaveLength(1);
        return res.body.items[0];
      });
    expect(await byRequest('audit-read-1')).toMatchObject({
      actorType: 'oidc',
      actor: 'default.admin',
      method: 'GET',
      route: '/api/tenant',
      status: 200,
      resourceType: 'tenant',
    });
    expect(await byRequest('audit-write-1')).toMatchObject({
      method: 'PUT',
      status: 200,
      resourceType: 'tenant',
      resourceId: 'default',
    });
    expect(await byRequest('audit-refused-1')).toMatchObject({ actor: 'default.viewer', status: 403 });
    const anonymous = await storedCall('audit-anon-1');
    expect(anonymous).toMatchObject({ actor_type: 'anonymous', tenant_id: null, status: 401 });
  });

  test('a caller-chosen NUL cannot cost anyone else their audit row', async () => {
    await t.call('GET', '/api/tenant', {
      token: await t.token('acme.admin'),
      headers: { 'x-request-id': 'nul-neighbour' },
    });
    await t.call('GET', '/api/pats/%00', { headers: { 'x-request-id': 'nul-anon' } });
    await t.call('GET', '/api/pats/%00', { token: admin, headers: { 'x-request-id': 'nul-authenticated' } });
    for (const id of ['nul-neighbour', 'nul-anon', 'nul-authenticated']) await storedCall(id);
  });

  test('reads record the resource they read', async () => {
    await t.call('GET', '/api/tenant', { token: admin, headers: { 'x-request-id': 'read-resource' } });
    expect(await storedCall('read-resource')).toMatchObject({ resource_type: 'tenant', resource_id: 'default' });
  });

  test('a change and its audit row commit together; a failed change leaves the change out', async () => {
    const etag = (await t.call('GET', '/api/tenant', { token: admin })).headers.get('etag')!;
    await t.call('PUT', '/api/tenant', {
      token: admin,
      body: { displayName: 'first' },
      headers: { 'if-match': etag, 'x-request-id': 'tx-ok' },
    });
    // written inside the transaction: visible as soon as the response is
    expect(await t.database.db('audit_calls').where({ request_id: 'tx-ok' }).first()).toMatchObject({ status: 200 });
    await t.call('PUT', '/api/tenant', {
      token: admin,
      body: { displayName: 'second' },
      headers: { 'if-match': etag, 'x-request-id': 'tx-412' },
    });
    expect((await storedCall('tx-412')).status).toBe(412);
    expect((await t.call('GET', '/api/tenant', { token: admin })).body.displayName).toBe('first');
  });

  test('the chain verifies, and the database refuses UPDATE, DELETE and TRUNCATE', async () => {
    await eventually(async () =>
      expect(Number((await t.database.db('audit_calls').count({ n: '*' }))[0]!.n)).toBeGreaterThan(5),
    );
    const verdict = await t.call('GET', '/api/audit/verify', { token: auditor });
    expect(verdict.body).toMatchObject({ valid: true, firstBrokenSeq: null });
    expect(verdict.body.checked).toBeGreaterThan(5);

    await expect(t.database.db('audit_events').update({ status: 200 })).rejects.toThrow(/append-only: UPDATE refused/);
    await expect(t.database.db('audit_events').delete()).rejects.toThrow(/append-only: DELETE refused/);
    await expect(t.database.db.raw('TRUNCATE audit_events')).rejects.toThrow(/append-only: TRUNCATE refused/);
  });

  test('rows inserted by other means are linked too, interleaving with batched appends', async () => {
    const db = t.database.db;
    await db('audit_events').insert({
      tenant_id: 'default',
      actor_type: 'anonymous',
      method: 'GET',
      path: '/direct',
      status: 200,
    });
    await db('audit_events').insert({
      tenant_id: 'acme',
      actor_type: 'anonymous',
      method: 'GET',
      path: '/direct',
      status: 200,
    });
    await Promise.all([
      t.call('GET', '/api/tenant', { token: admin }),
      t.call('GET', '/api/tenant', { token: await t.token('acme.viewer') }),
      db('audit_events').insert({
        tenant_id: 'default',
        actor_type: 'anonymous',
        method: 'GET',
        path: '/direct',
        status: 200,
      }),
    ]);
    await eventually(async () =>
      expect(await db('audit_calls').where({ chain: 'acme' }).count({ n: '*' })).toEqual([{ n: 2 }]),
    );
    for (const token of [auditor, await t.token('acme.auditor')]) {
      const verdict = await t.call('GET', '/api/audit/verify', { token });
      expect(verdict.body.valid).toBe(true);
    }
  });

  test('tampering (by someone who disabled the guard) is detected at the tampered row or link', async () => {
    const db = t.database.db;
    const tamper = (seq: number, change: Record<string, unknown>) =>
      db.transaction(async (trx) => {
        await trx.raw('ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete');
        await trx('audit_events').where({ seq }).update(change);
        await trx.raw('ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete');
      });
    const verify = async () => (await t.call('GET', '/api/audit/verify', { token: auditor })).body;
    const events = async (query: string) =>
      (await t.call('GET', `/api/audit/events?${query}`, { token: auditor })).body.items;

    // A read is written in a link with the calls queued with it: one altered call breaks the link.
    await t.call('GET', '/api/tenant', { token: admin, headers: { 'x-request-id': 'tampered-read' } });
    const read = await storedCall('tampered-read');
    const link = await db('audit_events').where({ seq: read.link_seq }).first();
    expect(link.calls).toContain('"tampered-read"');
    await tamper(link.seq, { calls: link.calls.replace('"tampered-read"', '"rewritten"') });
    expect(await verify()).toMatchObject({ valid: false, firstBrokenSeq: link.seq });
    expect(await events(`seq=${link.seq}`)).toEqual([expect.objectContaining({ seq: link.seq })]);
    expect(await db('audit_calls').where({ seq: read.seq }).first()).toMatchObject({ request_id: 'rewritten' });

    // A write has a row of its own; the earliest break is the one named.
    const write = await db('audit_calls').where({ request_id: 'tx-ok' }).first();
    expect(write.link_seq).toBe(write.seq);
    await tamper(write.seq, { actor: 'someone-else' });
    const verdict = await verify();
    expect(verdict).toMatchObject({ valid: false, firstBrokenSeq: write.seq });
    expect(await events(`seq=${verdict.firstBrokenSeq}`)).toEqual([
      expect.objectContaining({ seq: write.seq, actor: 'someone-else' }),
    ]);
    for (const bad of ['0', '-1', '1e3', '99999999999999999']) {
      expect((await t.call('GET', `/api/audit/events?seq=${bad}`, { token: auditor })).status).toBe(400);
    }
  });

  test('filters and pagination; newest first', async () => {
    for (let i = 0; i < 12; i++) await t.call('GET', '/api/tenant', { token: admin });
    await eventually(async () => {
      const res = await t.call('GET', '/api/audit/events?actor=default.admin&method=GET&limit=5', { token: auditor });
      expect(Number(res.headers.get('x-total-count'))).toBeGreaterThanOrEqual(12);
    });
    const first = await t.call('GET', '/api/audit/events?actor=default.admin&method=GET&limit=5', { token: auditor });
    const seqs = first.body.items.map((e: { seq: number }) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
    const second = await t.call(
      'GET',
      `/api/audit/events?actor=default.admin&method=GET&limit=5&cursor=${first.body.nextCursor}`,
      { token: auditor },
    );
    expect(second.body.items[0].seq).toBeLessThan(seqs[4]);
    const future = await t.call(
      'GET',
      `/api/audit/events?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      { token: auditor },
    );
    expect(future.body.items).toEqual([]);
    expect((await t.call('GET', '/api/audit/events?from=yesterday', { token: auditor })).status).toBe(400);
  });

  test('a search by actor or resource finds its calls in rows and links alike, and nothing for a value in neither', async () => {
    const created = await t.call('POST', '/api/groups', {
      token: admin,
      body: { name: 'searched' },
      headers: { 'x-request-id': 'searched-write' },
    });
    const id = created.body.id;
    await t.call('GET', `/api/groups/${id}`, { token: admin, headers: { 'x-request-id': 'searched-read' } });
    const [write, read] = [await storedCall('searched-write'), await storedCall('searched-read')];
    const heldIn = async (call: { link_seq: number }) =>
      (await t.database.db('audit_events').where({ seq: call.link_seq }).first()).calls as string | null;
    expect(await heldIn(write)).toBeNull(); // a row of its own
    expect(await heldIn(read)).toContain('"searched-read"'); // a call in a link

    const search = async (query: string) => {
      const res = await t.call('GET', `/api/audit/events?${query}`, { token: auditor });
      expect(res.status).toBe(200);
      return {
        requestIds: res.body.items.map((e: { requestId: string }) => e.requestId),
        total: res.headers.get('x-total-count'),
      };
    };
    expect(await search(`resourceType=group&resourceId=${id}`)).toEqual({
      requestIds: ['searched-read', 'searched-write'],
      total: '2',
    });
    expect(await search(`resourceId=${id}&method=POST`)).toEqual({ requestIds: ['searched-write'], total: '1' });
    expect(await search(`resourceId=${randomUUID()}`)).toEqual({ requestIds: [], total: '0' });
    expect(await search('actor=nobody-at-all')).toEqual({ requestIds: [], total: '0' });
    const byActor = await search(`actor=${encodeURIComponent(read.actor)}&resourceId=${id}`);
    expect(byActor).toEqual({ requestIds: ['searched-read', 'searched-write'], total: '2' });
  });

  test('a search for an actor that more than a thousand rows list walks the chain, and pages and counts alike', async () => {
    // Over 1,000 rows list the actor: the search walks the chain rather than opening each row.
    const call = (i: number): AuditRecord => ({
      tenant_id: 'default',
      occurred_at: new Date(),
      actor_type: 'pat',
      actor: 'busy-actor',
      actor_id: null,
      method: i % 2 ? 'GET' : 'PUT',
      path: '/api/tenant',
      route: '/api/tenant',
      status: 200,
      resource_type: 'tenant',
      resource_id: 'default',
      request_id: `busy-${i}`,
      source_address: null,
    });
    await insertAudit(
      t.database.db,
      Array.from({ length: 1_001 }, (_, i) => call(i)),
    );
    await appendAuditCalls(
      t.database.db,
      Array.from({ length: 10 }, (_, i) => call(1_001 + i)),
    );
    const page = async (query: string) => {
      const res = await t.call('GET', `/api/audit/events?actor=busy-actor&${query}`, { token: auditor });
      expect(res.status).toBe(200);
      return {
        requestIds: res.body.items.map((e: { requestId: string }) => e.requestId),
        total: Number(res.headers.get('x-total-count')),
        nextCursor: res.body.nextCursor as string | null,
      };
    };
    const first = await page('limit=12');
    expect(first.total).toBe(1_011);
    expect(first.requestIds).toEqual(Array.from({ length: 12 }, (_, i) => `busy-${1_010 - i}`));
    const second = await page(`limit=12&cursor=${first.nextCursor}`);
    expect(second.requestIds).toEqual(Array.from({ length: 12 }, (_, i) => `busy-${998 - i}`));
    const puts = await page('method=PUT&limit=3');
    expect(puts).toMatchObject({ requestIds: ['busy-1010', 'busy-1008', 'busy-1006'], total: 506 });
  });

  test("a tenant's auditor sees only its own tenant's events", async () => {
    await t.call('GET', '/api/tenant', {
      token: await t.token('acme.viewer'),
      headers: { 'x-request-id': 'acme-only' },
    });
    await storedCall('acme-only');
    const mine = await t.call('GET', '/api/audit/events?requestId=acme-only', { token: auditor });
    expect(mine.body.items).toEqual([]);
    const theirs = await t.call('GET', '/api/audit/events?requestId=acme-only', {
      token: await t.token('acme.auditor'),
    });
    expect(theirs.body.items).toHaveLength(1);
  });

  test('a batch of several tenants is appended in one go: every field as sent, every chain verifies', async () => {
    const db = t.database.db;
    const odd = 'a "quoted", (odd) \\ value {with} spaces, ünïcode';
    const record = (tenant: string | null, requestId: string, actor: string | null): AuditRecord => ({
      tenant_id: tenant,
      occurred_at: new Date('2026-11-24T12:00:00.123Z'),
      actor_type: tenant ? 'pat' : 'anonymous',
      actor,
      actor_id: null,
      method: 'GET',
      path: '/api/tenant',
      route: null,
      status: 200,
      resource_type: 'tenant',
      resource_id: '',
      request_id: requestId,
      source_address: null,
    });
    await insertAudit(db, [
      record('batch-b', 'batch-1', odd),
      record(null, 'batch-2', null),
      record('batch-a', 'batch-3', 'NULL'),
      record('batch-b', 'batch-4', ''),
    ]);
    const rows = await db('audit_events').whereLike('request_id', 'batch-%').orderBy('request_id');
    expect(rows.map((row) => [row.chain, row.actor, row.resource_id, row.occurred_at.toISOString()])).toEqual([
      ['batch-b', odd, '', '2026-11-24T12:00:00.123Z'],
      ['*', null, '', '2026-11-24T12:00:00.123Z'],
      ['batch-a', 'NULL', '', '2026-11-24T12:00:00.123Z'],
      ['batch-b', '', '', '2026-11-24T12:00:00.123Z'],
    ]);
    expect(rows[3].seq).toBeGreaterThan(rows[0].seq);
    expect(rows[3].prev_hash).toEqual(rows[0].hash);
    for (const chain of ['batch-a', 'batch-b', '*']) expect((await verifyAuditChain(db, chain)).valid).toBe(true);

    // A batch the database refuses leaves none of its rows behind (the trail then retries row by row).
    await expect(
      insertAudit(db, [
        record('batch-a', 'refused-1', 'x'),
        { ...record('batch-b', 'refused-2', 'x'), status: 2 ** 40 },
      ]),
    ).rejects.toThrow();
    expect(await db('audit_events').whereLike('request_id', 'refused-%')).toEqual([]);

    // The same calls as links: one row per chain, every field read back as sent.
    await appendAuditCalls(db, [
      record('batch-b', 'link-1', odd),
      record(null, 'link-2', null),
      record('batch-a', 'link-3', 'NULL'),
      { ...record('batch-b', 'link-4', ''), route: '/api/tenant', actor_id: 'ünï"\\', status: 404 },
    ]);
    const calls = await db('audit_calls').whereLike('request_id', 'link-%').orderBy('request_id');
    expect(calls.map((call) => [call.chain, call.actor, call.resource_id, call.occurred_at.toISOString()])).toEqual([
      ['batch-b', odd, '', '2026-11-24T12:00:00.123Z'],
      ['*', null, '', '2026-11-24T12:00:00.123Z'],
      ['batch-a', 'NULL', '', '2026-11-24T12:00:00.123Z'],
      ['batch-b', '', '', '2026-11-24T12:00:00.123Z'],
    ]);
    expect(calls[3]).toMatchObject({
      route: '/api/tenant',
      actor_id: 'ünï"\\',
      status: 404,
      link_seq: calls[0].link_seq,
    });
    expect(calls[3].seq).toBe(calls[0].seq + 1);
    const links = await db('audit_events').whereNotNull('calls').whereIn('seq', [calls[0].link_seq, calls[2].link_seq]);
    expect(links.map((link) => [link.chain, link.actors, link.request_ids])).toEqual(
      expect.arrayContaining([
        ['batch-b', [odd, ''], ['link-1', 'link-4']],
        ['batch-a', ['NULL'], ['link-3']],
      ]),
    );
    for (const chain of ['batch-a', 'batch-b', '*']) expect((await verifyAuditChain(db, chain)).valid).toBe(true);
    expect((await verifyAuditChain(db, 'batch-b')).checked).toBe(4);
  });

  test('pages walk rows and links alike: every call once, newest first; the total counts calls', async () => {
    for (let i = 0; i < 9; i++) await t.call('GET', `/api/groups/${randomUUID()}`, { token: admin });
    await t.call('PUT', '/api/tenant', { token: admin, body: { displayName: 'paged' } });
    for (let i = 0; i < 4; i++) {
      await t.call('GET', '/api/tenant', { token: admin, headers: { 'x-request-id': `paged-${i}` } });
    }
    // The trail appends in order: once the last call is there, every call before it is.
    await storedCall('paged-3');
    const stored = await t.database.db('audit_calls').where({ chain: 'default' }).orderBy('seq', 'desc').pluck('seq');
    expect(await t.database.db('audit_events').where({ chain: 'default' }).count({ n: '*' })).not.toEqual([
      { n: stored.length },
    ]); // some calls share a link

    const seen: number[] = [];
    const totals: number[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { items: Array<{ seq: number }>; nextCursor: string | null }; headers: Headers } =
        await t.call('GET', `/api/audit/events?limit=7${cursor ? `&cursor=${cursor}` : ''}`, { token: auditor });
      totals.push(Number(page.headers.get('x-total-count')));
      seen.push(...page.body.items.map((event) => event.seq));
      cursor = page.body.nextCursor;
    } while (cursor);
    // The pages' own calls come after the first page, so the walk shows exactly what was stored before it.
    expect(seen).toEqual(stored);
    expect(totals[0]).toBe(stored.length);
  });
});
