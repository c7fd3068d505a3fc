/**
 * The receiver's side of a handover, as a sender installation calls it with the `peer` PAT
 * we issued: a handover token (retries replace it), its single-use redemption into a
 * bootstrap token for exactly the named agents, who has arrived, and cancellation. Real
 * app, real agent listener, simulated agents over TLS.
 */
import { randomUUID } from 'node:crypto';
import { startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { newInstanceUid, uidToUuid } from '../../scripts/agents/opamp-client';
import { SimulatedAgent } from '../../scripts/agents/agent';

let t: TestApp;
let gateway: TestGateway;
let peer: string;
const PEER_NAME = 'peer-sender-a';
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  t = await startTestApp();
  gateway = await startTestGateway(t);
  peer = await t.pat('peer', { name: PEER_NAME });
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  await gateway?.close();
  await t?.close();
});

const incoming = (id: string) => `/api/federation/incoming/handovers/${id}`;
const put = (id: string, agentIds: string[], token = peer) =>
  t.call('PUT', incoming(id), { token, body: { agentIds, deadlineSeconds: 600 } });
const redeem = (token: string, as = peer) =>
  t.call('POST', '/api/federation/handover/redeem', { token: as, body: { token } });

function uids(n: number) {
  const list = Array.from({ length: n }, () => newInstanceUid());
  return { list, ids: list.map(uidToUuid) };
}

/** An agent following the redeemed offer the way a handed-over agent does: that endpoint, that CA, that token. */
function arriving(uid: Uint8Array, offer: { bootstrapToken: string; caPem: string }) {
  const agent = new SimulatedAgent({
    endpoint: gateway.wsUrl,
    token: offer.bootstrapToken,
    ca: offer.caPem,
    instanceUid: uid,
    csr: false,
    reconnectMinMs: 50,
    reconnectMaxMs: 200,
  });
  agents.push(agent);
  return agent;
}

describe('a retried peer call creates nothing twice', () => {
  test('PUT twice: one row, the first token refused on redeem; the second redeems once (again: 409); a PUT after redeem before any agent came starts over, revoking the unused bootstrap token', async () => {
    const id = randomUUID();
    const { ids } = uids(2);
    const first = await put(id, ids);
    expect(first.status).toBe(201);
    expect(first.body.token).toMatch(/^svc-ho\.[a-z2-7]{32}\.[a-z2-7]{7}$/);
    expect(first.headers.get('cache-control')).toBe('no-store');
    const second = await put(id, ids);
    expect(second.status).toBe(200);
    expect(second.body.token).not.toBe(first.body.token);

    const rows = await t.database.db('incoming_handovers').where({ id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ tenant_id: 'default', requested_by: PEER_NAME, state: 'issued' });
    expect(rows[0].token_hash.toString('hex')).not.toContain(second.body.token);
    expect(await t.database.db('events').where({ type: 'federation.handover.requested', subject: id })).toHaveLength(1);

    const stale = await redeem(first.body.token);
    expect(stale.status).toBe(404);
    expect(stale.body.type).toBe('http://fleet.test/errors/not-found');

    const redeemed = await redeem(second.body.token);
    expect(redeemed.status).toBe(200);
    expect(redeemed.body).toMatchObject({
      endpoint: t.settings.federation.agentEndpoint,
      caPem: gateway.ca.certificatePem,
    });
    expect(redeemed.body.bootstrapToken).toMatch(/^svc-bt\./);
    const token = await t.database
      .db('bootstrap_tokens')
      .where({ id: (await t.database.db('incoming_handovers').where({ id }).first()).bootstrap_token_id })
      .first();
    expect(token).toMatchObject({ max_uses: 2, tenant_id: 'default', revoked_at: null });
    expect([...token.agent_ids].sort()).toEqual([...ids].sort());
    expect(token.expires_at.toISOString()).toBe(redeemed.body.expiresAt);

    const again = await redeem(second.body.token);
    expect(again.status).toBe(409);

    // The sender never got that answer (a timeout): it asks again before any agent came. The
    // handover starts over with a fresh token; the bootstrap token nobody used is revoked.
    const retried = await put(id, ids);
    expect(retried.status).toBe(200);
    expect((await redeem(second.body.token)).status).toBe(404);
    const offerAgain = await redeem(retried.body.token);
    expect(offerAgain.status).toBe(200);
    expect(offerAgain.body.bootstrapToken).not.toBe(redeemed.body.bootstrapToken);
    const issuedTokens = await t.database.db('bootstrap_tokens').where({ name: `handover ${id}` });
    expect(issuedTokens).toHaveLength(2);
    expect(issuedTokens.filter((row) => row.revoked_at === null)).toHaveLength(1);
    // Revoked as the tokens API revokes one: announced, with the token as GET /api/tokens/{id} shows it.
    const revoked = issuedTokens.find((row) => row.revoked_at !== null)!;
    const revokedEvents = await t.database.db('events').where({ type: 'bootstrap-token.revoked', subject: revoked.id });
    expect(revokedEvents.map((event) => event.data)).toEqual([
      expect.objectContaining({ id: revoked.id, state: 'revoked', name: `handover ${id}` }),
    ]);

    // Every call is audited under the PAT's name.
    await eventually(async () => {
      const audit = await t.database.db('audit_calls').where({ actor: PEER_NAME, resource_type: 'incoming-handover' });
      expect(audit.map((row) => [row.method, row.status])).toEqual(
        expect.arrayContaining([
          ['PUT', 201],
          ['PUT', 200],
          ['POST', 404],
          ['POST', 200],
          ['POST', 409],
        ]),
      );
    });
  });

  test('a retry naming other agents is 409; an unknown, malformed or expired token is 404 alike', async () => {
    const id = randomUUID();
    expect((await put(id, uids(1).ids)).status).toBe(201);
    expect((await put(id, uids(1).ids)).status).toBe(409);
    expect((await redeem('svc-ho.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaa')).status).toBe(404);
    const old = randomUUID();
    const issued = (await put(old, uids(1).ids)).body.token as string;
    await t.database
      .db('incoming_handovers')
      .where({ id: old })
      .update({ token_expires_at: new Date(Date.now() - 1000) });
    const expired = await redeem(issued);
    expect(expired.status).toBe(404);
    expect(JSON.stringify(expired.body)).not.toContain(issued);
  });
});

describe('the redeemed token admits exactly the handover’s agents', () => {
  test('listed agents enrol and show enrolled; an unlisted one is refused; cancel stops the rest, idempotently', async () => {
    const id = randomUUID();
    const { list, ids } = uids(3);
    const token = (await put(id, ids)).body.token as string;
    const offer = (await redeem(token)).body;

    const first = arriving(list[0]!, offer);
    await first.start();
    await first.waitFor((state) => state.enrolled && state.connected);
    const stranger = arriving(newInstanceUid(), offer);
    await stranger.start();
    await stranger.waitFor((state) => state.refused !== undefined || state.errors > 0);
    expect(stranger.state).toMatchObject({ enrolled: false, refused: expect.anything() });

    const status = await eventually(async () => {
      const res = await t.call('GET', incoming(id), { token: peer });
      expect(res.status).toBe(200);
      expect(res.body.agents.find((agent: { id: string }) => agent.id === ids[0]).enrolled).toBe(true);
      return res.body;
    });
    expect(status).toMatchObject({ id, state: 'redeemed', requestedBy: PEER_NAME });
    // An agent came with the bootstrap token: the offer is out, the handover cannot start over.
    const restart = await put(id, ids);
    expect(restart.status).toBe(409);
    expect(restart.body.detail).toMatch(/arriving/);
    expect(status.agents).toEqual([
      { id: ids[0], enrolled: true, status: 'online' },
      { id: ids[1], enrolled: false, status: null },
      { id: ids[2], enrolled: false, status: null },
    ]);

    const cancel = await t.call('POST', `${incoming(id)}/cancel`, {
      token: peer,
      body: { agentIds: [ids[0], ids[1]] },
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toEqual({ id, state: 'redeemed', cancelled: [ids[1]], alreadyEnrolled: [ids[0]] });
    const late = arriving(list[1]!, offer);
    await late.start();
    await late.waitFor((state) => state.refused !== undefined || state.errors > 0);
    expect(late.state).toMatchObject({ enrolled: false, refused: expect.anything() });
    const third = arriving(list[2]!, offer);
    await third.start();
    await third.waitFor((state) => state.enrolled && state.connected);

    // All the rest: nothing left to admit; the token is not revoked (agents authenticate with it).
    const all = await t.call('POST', `${incoming(id)}/cancel`, { token: peer, body: {} });
    expect(all.body).toEqual({ id, state: 'redeemed', cancelled: [ids[1]], alreadyEnrolled: [ids[0], ids[2]] });
    const bootstrap = await t.database
      .db('bootstrap_tokens')
      .where({ name: `handover ${id}` })
      .first();
    expect(bootstrap.revoked_at).toBeNull();
    expect([...bootstrap.agent_ids].sort()).toEqual([ids[0], ids[2]].sort());
  });

  test('cancel before anyone arrived: the request is cancelled and its token never redeems; after redeem the bootstrap token is revoked', async () => {
    const before = randomUUID();
    const token = (await put(before, uids(2).ids)).body.token as string;
    const cancelled = await t.call('POST', `${incoming(before)}/cancel`, { token: peer });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.state).toBe('cancelled');
    expect((await redeem(token)).status).toBe(409);
    expect((await t.call('POST', `${incoming(before)}/cancel`, { token: peer })).body.state).toBe('cancelled');

    const after = randomUUID();
    const { list, ids } = uids(1);
    const offer = (await redeem((await put(after, ids)).body.token)).body;
    expect((await t.call('POST', `${incoming(after)}/cancel`, { token: peer })).body.state).toBe('cancelled');
    expect(
      (
        await t.database
          .db('bootstrap_tokens')
          .where({ name: `handover ${after}` })
          .first()
      ).revoked_at,
    ).not.toBeNull();
    const agent = arriving(list[0]!, offer);
    await agent.start();
    await agent.waitFor((state) => state.refused !== undefined || state.errors > 0);
    expect(agent.state).toMatchObject({ enrolled: false, refused: expect.anything() });
  });
});

describe('who may call, and what is refused', () => {
  test('validation: no agents, a bad id, an agent twice, unknown body members: 400 naming the field', async () => {
    const id = randomUUID();
    const empty = await put(id, []);
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0].path).toBe('body.agentIds');
    expect((await put(id, ['not-a-uuid'])).status).toBe(400);
    const twice = randomUUID();
    expect((await put(id, [twice, twice])).status).toBe(400);
    expect((await t.call('PUT', incoming('nope'), { token: peer, body: { agentIds: [twice] } })).status).toBe(400);
    const extra = await t.call('PUT', incoming(id), { token: peer, body: { agentIds: [twice], name: 'x' } });
    expect(extra.status).toBe(400);
    expect((await t.call('POST', `${incoming(id)}/cancel`, { token: peer, body: { agentIds: [] } })).status).toBe(400);
  });

  test('another tenant’s peer sees 404; a viewer or operator is 403; an admin may (federate); a peer PAT is 403 on the sender’s endpoints', async () => {
    const id = randomUUID();
    expect((await put(id, uids(1).ids)).status).toBe(201);
    const acmePeer = await t.pat('peer', { tenant: 'acme', name: 'peer-acme' });
    expect((await t.call('GET', incoming(id), { token: acmePeer })).status).toBe(404);
    expect((await t.call('POST', `${incoming(id)}/cancel`, { token: acmePeer })).status).toBe(404);
    expect((await put(id, uids(1).ids, acmePeer)).status).toBe(409);

    for (const client of ['default.viewer', 'default.operator']) {
      const token = await t.token(client);
      expect((await put(randomUUID(), uids(1).ids, token)).status).toBe(403);
      expect((await t.call('GET', incoming(id), { token })).status).toBe(403);
    }
    const admin = await t.token('default.admin');
    expect((await t.call('GET', incoming(id), { token: admin })).status).toBe(200);
    expect((await put(randomUUID(), uids(1).ids, admin)).status).toBe(201);

    expect((await t.call('GET', '/api/federation/handovers', { token: peer })).status).toBe(403);
    const create = await t.call('POST', '/api/federation/handovers', {
      token: peer,
      body: { peerId: randomUUID(), agentIds: [randomUUID()] },
    });
    expect(create.status).toBe(403);
  });
});
