/**
 * Handing live agents to a peer, end to end: installations of their own (database, api,
 * TLS agent listener, worker) on the suite's Temporal dev server, paired through the API,
 * simulated agents over real sockets that follow the OpAMP connection-settings offer.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { insertHandover } from '../../db/repos/handovers';
import { offeredCaBundle } from '../../domain/federation/handover-offer';
import {
  handoverStatusQuery,
  handoverWorkflowId,
  peerHealthStatusQuery,
  peerHealthWorkflowId,
  type HandoverOutcome,
} from '../../workflows/definitions';
import { tenantIdKey } from '../../workflows/search-attributes';
import { seedAgent } from '../support/agents-seed';
import { startTestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { recordHistories } from '../support/histories';
import { pair, startInstallation, type Installation } from '../support/federation';
import { freePort } from '../support/processes';

let a: Installation;
let b: Installation;
/** A receiver whose agent endpoint (Agents:PublicEndpoint) is a closed port: agents never reach it. */
let c: Installation;
let peerB: string;
let peerC: string;

beforeAll(async () => {
  const unreachable = `wss://127.0.0.1:${await freePort()}/v1/opamp`;
  [a, b, c] = await Promise.all([
    startInstallation('alpha'),
    startInstallation('bravo'),
    startInstallation('charlie', { apiEnv: { Agents__PublicEndpoint: unreachable } }),
  ]);
  [peerB, peerC] = await Promise.all([pair(a, b), pair(a, c)]);
}, 90_000);
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), c?.close()]);
});

const HANDOVERS = '/api/federation/handovers';

async function handOver(body: Record<string, unknown>) {
  const res = await a.t.call('POST', HANDOVERS, { token: a.admin, body });
  expect(res.status).toBe(201);
  return res.body as { id: string; state: string; counts: Record<string, number> };
}

/** The handover once it has ended, as GET shows it. */
async function ended(id: string, timeoutMs = 45_000) {
  return eventually(async () => {
    const res = await a.t.call('GET', `${HANDOVERS}/${id}`, { token: a.admin });
    expect(res.status).toBe(200);
    expect(res.body.state).not.toBe('running');
    return res.body;
  }, timeoutMs);
}

const outcome = (id: string) =>
  a.client.workflow.getHandle(handoverWorkflowId(id)).result() as Promise<HandoverOutcome>;
const events = (inst: Installation, type: string, subject: string) =>
  inst.t.database.db('events').where({ type, subject });

describe('a handover of live agents', () => {
  let moved: { ids: string[]; fleet: Awaited<ReturnType<Installation['fleet']>>['fleet'] };

  test('ends with them on the receiver over mTLS with its certificates, handed-over here; events and audit rows on both sides', async () => {
    const { ids, fleet } = await a.fleet(3, { csr: true, reconnectMinMs: 50, reconnectMaxMs: 500 });
    moved = { ids, fleet };
    await fleet.waitForAll((state) => state.mtls, 15_000);

    const created = await handOver({ peerId: peerB, agentIds: ids, deadlineSeconds: 120 });
    expect(created).toMatchObject({ state: 'running', peerId: peerB, peerName: 'bravo', deadlineSeconds: 120 });
    expect(created.counts.total).toBe(3);
    const started = await a.client.workflow.getHandle(handoverWorkflowId(created.id)).describe();
    expect(started.typedSearchAttributes.get(tenantIdKey)).toBe('default');
    expect(await started.staticSummary()).toBe("Hand 3 agents over to peer 'bravo'");

    const done = await ended(created.id);
    expect(done).toMatchObject({ state: 'completed', reason: null });
    await recordHistories(a.client, handoverWorkflowId(created.id), 'handover-completed');
    expect(done.counts).toEqual({
      total: 3,
      pending: 0,
      offered: 0,
      handedOver: 3,
      withdrawn: 0,
      missing: 0,
      skipped: 0,
    });
    expect(await outcome(created.id)).toEqual({
      state: 'completed',
      handedOver: 3,
      withdrawn: 0,
      missing: 0,
      skipped: 0,
      reason: null,
    });
    // The Temporal UI: the query and the current details say where it ended.
    const handle = a.client.workflow.getHandle(handoverWorkflowId(created.id));
    expect(await handle.query(handoverStatusQuery)).toMatchObject({
      step: 'settled',
      outcome: { state: 'completed', handedOver: 3 },
    });
    const metadata = await handle.query<{ currentDetails: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain('- Outcome: completed: 3 handed over, 0 withdrawn, 0 missing, 0 skipped');
    // No activity per agent: a handover's history stays small whatever its size.
    const history = await a.client.workflow.getHandle(handoverWorkflowId(created.id)).fetchHistory();
    expect(history.events!.length).toBeLessThan(60); // six activities, whatever the agent count

    // The agents live on the receiver now: online there, with a certificate of its CA, over mTLS.
    await fleet.waitForAll(
      (state) => state.connected && state.mtls && state.certificate?.caPem === b.gateway.ca.certificatePem,
      20_000,
    );
    for (const id of ids) {
      const there = await eventually(async () => {
        const res = await b.t.call('GET', `/api/agents/${id}`, { token: b.admin });
        expect(res.body.status).toBe('online');
        expect(res.body.certificate?.serial).toBeTruthy();
        return res.body;
      }, 15_000);
      expect(there.certificate.revokedAt).toBeNull();
    }
    // …and here they are handed-over, gone from the online agents.
    const online = await a.t.call('GET', '/api/agents?status=online&limit=1000', { token: a.admin });
    expect(online.body.items.map((agent: { id: string }) => agent.id)).not.toEqual(expect.arrayContaining([ids[0]]));
    for (const id of ids) {
      const here = (await a.t.call('GET', `/api/agents/${id}`, { token: a.admin })).body;
      expect(here.status).toBe('handed-over');
      // Our certificate is no one's word for it any more.
      expect(here.certificate.revokedAt).toBeTruthy();
    }
    const page = await a.t.call('GET', `${HANDOVERS}/${created.id}/agents?state=handed-over&limit=2`, {
      token: a.admin,
    });
    expect(page.body.items.map((row: { agentId: string }) => row.agentId)).toEqual(ids.slice(0, 2));
    expect(page.body.nextCursor).toBeTruthy();
    const list = await a.t.call('GET', `${HANDOVERS}?state=completed`, { token: await a.t.token('default.viewer') });
    expect(list.body.items.map((row: { id: string }) => row.id)).toContain(created.id);

    expect(await events(a, 'federation.handover.started', created.id)).toMatchObject([
      { data: { peerId: peerB, peerName: 'bravo', agentCount: 3 } },
    ]);
    expect(await events(a, 'federation.handover.agent-handed-over', created.id)).toHaveLength(3);
    expect(await events(a, 'federation.handover.completed', created.id)).toHaveLength(1);
    expect(await events(b, 'federation.handover.requested', created.id)).toMatchObject([
      { data: { requestedBy: 'peer-alpha', agentIds: ids } },
    ]);
    expect(await events(b, 'federation.handover.agent-received', created.id)).toHaveLength(3);

    await eventually(async () => {
      const sent = await a.t.database.db('audit_calls').where({ path: HANDOVERS, method: 'POST', status: 201 });
      expect(sent.map((row) => row.resource_id)).toContain(created.id);
      const received = await b.t.database.db('audit_calls').where({ actor: 'peer-alpha', actor_type: 'pat' });
      expect(received.map((row) => `${row.method} ${row.status}`)).toEqual(
        expect.arrayContaining(['PUT 201', 'POST 200', 'GET 200']),
      );
    });
  }, 90_000);

  test('handed back by the receiver, they enrol again where they came from: online there, handed-over on the receiver', async () => {
    const { ids, fleet } = moved;
    const peerA = await pair(b, a);
    const back = await b.t.call('POST', HANDOVERS, {
      token: b.admin,
      body: { peerId: peerA, agentIds: ids, deadlineSeconds: 120 },
    });
    expect(back.status).toBe(201);
    const done = await eventually(async () => {
      const res = await b.t.call('GET', `${HANDOVERS}/${back.body.id}`, { token: b.admin });
      expect(res.body.state).not.toBe('running');
      return res.body;
    }, 45_000);
    expect(done).toMatchObject({ state: 'completed', counts: { handedOver: 3 } });

    // Home again: a's CA, online on a (their rows there came back from handed-over), gone from b.
    await fleet.waitForAll(
      (state) => state.connected && state.mtls && state.certificate?.caPem === a.gateway.ca.certificatePem,
      20_000,
    );
    for (const id of ids) {
      await eventually(async () => {
        expect((await a.t.call('GET', `/api/agents/${id}`, { token: a.admin })).body.status).toBe('online');
      }, 15_000);
      expect((await b.t.call('GET', `/api/agents/${id}`, { token: b.admin })).body.status).toBe('handed-over');
    }
    expect(await events(a, 'federation.handover.agent-received', back.body.id)).toHaveLength(3);
    // The peer-health loop of a, which has checked bravo (and charlie) since the pairing.
    const health = a.client.workflow.getHandle(peerHealthWorkflowId(a.taskQueue));
    expect(await health.query(peerHealthStatusQuery)).toMatchObject({
      last: { pinged: expect.any(Number), healthy: expect.any(Number) },
    });
    expect(await (await health.describe()).staticSummary()).toBe('Peer health: pings every federation peer, for ever');
    await recordHistories(a.client, peerHealthWorkflowId(a.taskQueue), 'peer-health');
  }, 90_000);
});

describe('a handover the receiver never completes', () => {
  test('is compensated at its deadline: the agents stay here online, the receiver’s token no longer admits them', async () => {
    const { ids, fleet } = await a.fleet(2, { csr: true, reconnectMinMs: 50, reconnectMaxMs: 500 });
    await fleet.waitForAll((state) => state.mtls, 15_000);

    const created = await handOver({ peerId: peerC, agentIds: ids, deadlineSeconds: 10 });
    const done = await ended(created.id);
    expect(done.state).toBe('compensated');
    expect(done.counts).toMatchObject({ total: 2, handedOver: 0, withdrawn: 2 });
    expect(done.reason).toBe('2 not seen by the receiver before the deadline: they stay here');
    expect(await outcome(created.id)).toMatchObject({ state: 'compensated', handedOver: 0, withdrawn: 2 });
    await recordHistories(a.client, handoverWorkflowId(created.id), 'handover-compensated');
    expect(await events(a, 'federation.handover.compensated', created.id)).toHaveLength(1);

    await fleet.waitForAll((state) => state.connected && state.endpoint === a.gateway.wsUrl, 20_000);
    for (const id of ids) {
      await eventually(async () => {
        expect((await a.t.call('GET', `/api/agents/${id}`, { token: a.admin })).body.status).toBe('online');
      }, 15_000);
    }
    const rows = await a.t.database.db('handover_agents').where({ handover_id: created.id });
    expect(rows.map((row) => [row.state, row.active])).toEqual([
      ['withdrawn', false],
      ['withdrawn', false],
    ]);

    const incoming = await c.t.database.db('incoming_handovers').where({ id: created.id }).first();
    expect(incoming.state).toBe('cancelled');
    const token = await c.t.database.db('bootstrap_tokens').where({ id: incoming.bootstrap_token_id }).first();
    expect(token.agent_ids).toEqual([]);
    expect(token.revoked_at).not.toBeNull();
    // Its token was announced as one issued through the tokens API is (the token itself in no event).
    const [issued] = await c.t.database.db('events').where({ type: 'bootstrap-token.issued', subject: token.id });
    expect(issued.data).toMatchObject({ id: token.id, name: `handover ${created.id}`, maxUses: 2, poolId: null });
    const listed = await c.t.call('GET', '/api/tokens', { token: c.admin });
    const shown = listed.body.items.find((item: { id: string }) => item.id === token.id);
    expect(Object.keys(issued.data).sort()).toEqual(Object.keys(shown).sort());
  }, 90_000);

  test('a receiver that stops answering while agents are offered: retried until the deadline, then compensated', async () => {
    const unreachable = `wss://127.0.0.1:${await freePort()}/v1/opamp`;
    const d = await startInstallation('delta', { apiEnv: { Agents__PublicEndpoint: unreachable } });
    let closed = false;
    try {
      const peerD = await pair(a, d);
      const { ids, fleet } = await a.fleet(2, { csr: true, reconnectMinMs: 50, reconnectMaxMs: 500 });
      await fleet.waitForAll((state) => state.mtls, 15_000);
      const created = await handOver({ peerId: peerD, agentIds: ids, deadlineSeconds: 12 });
      await eventually(async () => {
        const res = await a.t.call('GET', `${HANDOVERS}/${created.id}`, { token: a.admin });
        expect(res.body.counts.offered).toBe(2);
      }, 15_000);
      await d.close();
      closed = true;

      const done = await ended(created.id);
      expect(done).toMatchObject({ state: 'compensated', counts: { handedOver: 0, withdrawn: 2 } });
      expect(done.reason).toMatch(/the receiver did not answer the cancel/);
      // Not given up early: it waited for the receiver until the deadline.
      expect(Date.parse(done.finishedAt) - Date.parse(done.createdAt)).toBeGreaterThanOrEqual(12_000);
      await fleet.waitForAll((state) => state.connected && state.endpoint === a.gateway.wsUrl, 20_000);
      for (const id of ids) {
        await eventually(async () => {
          expect((await a.t.call('GET', `/api/agents/${id}`, { token: a.admin })).body.status).toBe('online');
        }, 15_000);
      }
    } finally {
      if (!closed) await d.close();
    }
  }, 90_000);

  test('a receiver that refuses (a credential it does not accept) fails the handover: nothing offered, the agents free again', async () => {
    const { ids, groupId } = await a.fleet(2);
    const bogus = await a.t.call('POST', '/api/federation/peers', {
      token: a.admin,
      body: { name: 'bravo-bad-credential', baseUrl: b.t.baseUrl, credential: await b.t.pat('viewer') },
    });
    expect(bogus.status).toBe(201);

    const created = await handOver({ peerId: bogus.body.id, groupId });
    expect(created.counts.total).toBe(2);
    const done = await ended(created.id);
    expect(done.state).toBe('failed');
    expect(done.reason).toMatch(/403/);
    expect(done.counts).toMatchObject({ total: 2, offered: 0, handedOver: 0, skipped: 2 });
    expect(await a.t.database.db('handovers').where({ id: created.id }).first()).toMatchObject({
      offer_ciphertext: null,
    });
    expect(await events(a, 'federation.handover.failed', created.id)).toHaveLength(1);
    // Free again: the same agents may be handed over by another handover.
    const again = await a.t.call('POST', HANDOVERS, {
      token: a.admin,
      body: { peerId: bogus.body.id, agentIds: ids },
    });
    expect(again.status).toBe(201);
    await ended(again.body.id);
  }, 90_000);
});

describe('agents that implement part of OpAMP, or vanish', () => {
  test('one that applies only the offered CA (opamp-go’s example agent) keeps reaching the sender and gets its own CA back; one not seen since the offer is missing', async () => {
    const options = { csr: true, reconnectMinMs: 50, reconnectMaxMs: 500 } as const;
    const [partial, vanishing] = await Promise.all([
      a.fleet(1, { ...options, offersApplied: 'ca-only' }),
      a.fleet(1, { ...options, followOffers: false }),
    ]);
    await Promise.all([partial.fleet, vanishing.fleet].map((fleet) => fleet.waitForAll((state) => state.mtls, 15_000)));
    const [agent] = partial.fleet.agents;
    const trusted: string[] = [];
    agent!.on('ca-applied', (ca: string) => trusted.push(ca));
    // The vanishing agent (a laptop closed) stops as soon as it is offered the receiver.
    const [gone] = vanishing.fleet.agents;
    gone!.on('message', (reply: { connectionSettings?: { opamp?: { destinationEndpoint?: string } } }) => {
      if (reply.connectionSettings?.opamp?.destinationEndpoint) void gone!.vanish();
    });

    const created = await handOver({
      peerId: peerB,
      agentIds: [...partial.ids, ...vanishing.ids],
      deadlineSeconds: 10,
    });
    const done = await ended(created.id);
    expect(done).toMatchObject({
      state: 'compensated',
      counts: { total: 2, handedOver: 0, withdrawn: 1, missing: 1, skipped: 0 },
      reason:
        '1 not seen by the receiver before the deadline: they stay here; 1 not seen since the offer, here or by the ' +
        'receiver: they are connected to neither installation',
    });
    expect(await outcome(created.id)).toMatchObject({ state: 'compensated', withdrawn: 1, missing: 1 });
    const rows = await a.t.database.db('handover_agents').where({ handover_id: created.id });
    const byAgent = Object.fromEntries(rows.map((row) => [row.agent_id, [row.state, row.error]]));
    expect(byAgent).toEqual({
      [partial.ids[0]!]: ['withdrawn', 'the receiver did not see it before the deadline'],
      [vanishing.ids[0]!]: ['missing', expect.stringMatching(/^not seen here since it was offered the receiver/)],
    });
    const listed = await a.t.call('GET', `${HANDOVERS}/${created.id}/agents?state=missing`, { token: a.admin });
    expect(listed.body.items.map((item: { agentId: string }) => item.agentId)).toEqual(vanishing.ids);

    // The partial agent took the offer's CAs (the receiver's and ours), so it came back here at
    // once; withdrawn, it was offered our CA alone again. It is online here, over mTLS.
    expect(trusted[0]).toBe(offeredCaBundle(b.gateway.ca.certificatePem, a.gateway.ca.certificatePem));
    await eventually(async () => expect(trusted.at(-1)).toBe(a.gateway.ca.certificatePem), 15_000);
    await partial.fleet.waitForAll(
      (state) => state.connected && state.mtls && state.endpoint === a.gateway.wsUrl,
      15_000,
    );
    const shown = await a.t.call('GET', `/api/agents/${partial.ids[0]}`, { token: a.admin });
    expect(shown.body.status).toBe('online');
    expect(await b.t.database.db('agents').where({ id: partial.ids[0] })).toEqual([]);
  }, 90_000);
});

describe('a receiver that answers nonsense', () => {
  test('a redeem answer that is no usable offer (plain endpoint, no certificate, no token) fails the handover, nothing offered', async () => {
    // Another installation is not ours to trust: a peer that answers, but not as this service does.
    const hostile = createHttpServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'PUT') res.end(JSON.stringify({ token: 'svc-ho.x', expiresAt: new Date().toISOString() }));
      else if (req.url === '/api/federation/handover/redeem')
        res.end(JSON.stringify({ endpoint: 'ws://evil.test/v1/opamp', caPem: 'trust me', bootstrapToken: 'x' }));
      else res.end('{}');
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
      const peer = await a.t.call('POST', '/api/federation/peers', {
        token: a.admin,
        body: { name: 'hostile', baseUrl, credential: await b.t.pat('peer') },
      });
      expect(peer.status).toBe(201);
      const { ids } = await a.fleet(1);
      const created = await handOver({ peerId: peer.body.id, agentIds: ids });
      const done = await ended(created.id);
      expect(done.state).toBe('failed');
      expect(done.reason).toBe(
        "peer 'hostile' redeemed into no usable offer: endpoint is not a wss:// or https:// URL; caPem is not a PEM certificate; bootstrapToken is not a bootstrap token",
      );
      expect(done.counts).toMatchObject({ offered: 0, skipped: 1 });
      expect((await a.t.database.db('handovers').where({ id: created.id }).first()).offer_ciphertext).toBeNull();
    } finally {
      hostile.closeAllConnections();
      await new Promise((resolve) => hostile.close(resolve));
    }
  }, 60_000);
});

describe('what a request may ask', () => {
  test('400 for a malformed request, 404 for an unknown peer or group, 400/409 naming agents that are not ours or not free', async () => {
    const db = a.t.database.db;
    const mine = await seedAgent(db, 'default', { status: 'online' });
    const call = (body: unknown) => a.t.call('POST', HANDOVERS, { token: a.admin, body });

    expect((await call({ peerId: peerB, agentIds: [] })).status).toBe(400);
    expect((await call({ peerId: peerB })).status).toBe(400);
    const both = await call({ peerId: peerB, agentIds: [mine.id], groupId: mine.group_id });
    expect(both.status).toBe(400);
    expect(both.body.errors[0].message).toMatch(/exactly one of agentIds and groupId/);
    expect((await call({ peerId: peerB, agentIds: [mine.id], deadlineSeconds: 0 })).status).toBe(400);
    expect((await call({ peerId: 'x', agentIds: [mine.id] })).status).toBe(400);

    const unknownPeer = await call({ peerId: randomUUID(), agentIds: [mine.id] });
    expect(unknownPeer.status).toBe(404);
    expect((await call({ peerId: peerB, groupId: randomUUID() })).status).toBe(404);

    const foreign = await seedAgent(db, 'acme', { status: 'online' });
    const notOurs = await call({ peerId: peerB, agentIds: [mine.id, foreign.id] });
    expect(notOurs.status).toBe(400);
    expect(notOurs.body.errors).toEqual([{ path: 'body.agentIds.1', message: `no agent '${foreign.id}'` }]);

    const revoked = await seedAgent(db, 'default', { status: 'revoked' });
    const gone = await call({ peerId: peerB, agentIds: [mine.id, revoked.id] });
    expect(gone.status).toBe(409);
    expect(gone.body.detail).toContain(`'${revoked.id}' (revoked)`);

    const busy = await seedAgent(db, 'default', { status: 'online' });
    const running = randomUUID();
    await insertHandover(
      db,
      { id: running, tenant_id: 'default', peer_id: peerB, peer_name: 'bravo', deadline_seconds: 600, created_by: 't' },
      [busy.id],
    );
    const taken = await call({ peerId: peerB, agentIds: [mine.id, busy.id] });
    expect(taken.status).toBe(409);
    expect(taken.body.detail).toContain(`'${busy.id}' (handover ${running})`);
    // None of the refusals wrote a handover.
    expect(await db('handover_agents').where({ agent_id: mine.id })).toEqual([]);
  });

  test('a viewer or operator may read but not hand over (403); another tenant sees 404', async () => {
    const mine = await seedAgent(a.t.database.db, 'default', { status: 'online' });
    for (const client of ['default.viewer', 'default.operator']) {
      const token = await a.t.token(client);
      const res = await a.t.call('POST', HANDOVERS, { token, body: { peerId: peerB, agentIds: [mine.id] } });
      expect(res.status).toBe(403);
      expect((await a.t.call('GET', HANDOVERS, { token })).status).toBe(200);
    }
    const id = randomUUID();
    await insertHandover(
      a.t.database.db,
      { id, tenant_id: 'default', peer_id: peerB, peer_name: 'bravo', deadline_seconds: 600, created_by: 't' },
      [mine.id],
    );
    expect((await a.t.call('GET', `${HANDOVERS}/${id}`, { token: a.admin })).status).toBe(200);
    const acme = await a.t.token('acme.admin');
    expect((await a.t.call('GET', `${HANDOVERS}/${id}`, { token: acme })).status).toBe(404);
    expect((await a.t.call('GET', `${HANDOVERS}/${id}/agents`, { token: acme })).status).toBe(404);
  });

  test('Temporal not taking the workflow: 503, and the handover ends failed at once with its agents free', async () => {
    const t = await startTestApp(); // no Temporal client
    try {
      const admin = await t.token('default.admin');
      const peer = await t.call('POST', '/api/federation/peers', {
        token: admin,
        body: { name: 'bravo', baseUrl: b.t.baseUrl, credential: await b.t.pat('peer') },
      });
      expect(peer.status).toBe(201);
      const agent = await seedAgent(t.database.db, 'default', { status: 'online' });
      const res = await t.call('POST', HANDOVERS, {
        token: admin,
        body: { peerId: peer.body.id, agentIds: [agent.id] },
      });
      expect(res.status).toBe(503);
      expect(res.body.type).toBe('http://fleet.test/errors/unavailable');
      const [row] = await t.database.db('handovers');
      expect(row).toMatchObject({ state: 'failed', reason: expect.stringMatching(/could not be started/) });
      expect(await t.database.db('handover_agents').where({ agent_id: agent.id })).toMatchObject([
        { state: 'skipped', active: false },
      ]);
      expect(await t.database.db('events').where({ type: 'federation.handover.failed', subject: row.id })).toHaveLength(
        1,
      );
    } finally {
      await t.close();
    }
  });
});
