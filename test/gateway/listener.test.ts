import {
  AgentCapability,
  OPAMP_MAX_MESSAGE_BYTES,
  ServerCapability,
  ServerToAgentFlag,
  hasBits,
} from '../../gateway/codec';
import { RemoteConfigStatuses } from '../../gateway/gen/opamp_pb';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import {
  connectWs,
  description,
  newInstanceUid,
  postHttp,
  uidToUuid,
  UpgradeRefused,
  type AgentMessage,
} from '../../scripts/agents/opamp-client';

let t: TestApp;
let operator: string;
let gateway: TestGateway;
let wsUrl: string;
let httpUrl: string;

beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
  // This file covers the protocol over plain TCP (Development); TLS and mTLS: agent-gateway-tls.test.ts.
  gateway = await startTestGateway(t, { plaintext: true });
  ({ wsUrl, httpUrl } = gateway);
});
afterAll(async () => {
  await gateway?.close();
  await t?.close();
});

const issueToken = (body: Record<string, unknown> = {}) => issueBootstrapToken(t, operator, body);

const getAgent = (id: string) => t.call('GET', `/api/agents/${id}`, { token: operator });
const tokenRow = (id: string) => t.database.db('bootstrap_tokens').where({ id }).first();
const agentsOf = (tokenId: string) => t.database.db('agents').where({ enrolled_with_token_id: tokenId }).pluck('id');
const eventTypes = (agentId: string) =>
  t.database.db('events').where({ subject: agentId }).orderBy('seq').pluck('type');

function hello(uid: Uint8Array, extra: Partial<AgentMessage> = {}): AgentMessage {
  return {
    instanceUid: uid,
    sequenceNum: 1n,
    capabilities: AgentCapability.ReportsStatus | AgentCapability.ReportsHealth | AgentCapability.ReportsHeartbeat,
    agentDescription: description(
      { 'service.name': 'otelcol-edge', 'service.version': '0.99.0' },
      { 'host.name': 'rack12-n3' },
    ),
    ...extra,
  } as AgentMessage;
}

async function refusedUpgrade(url: string, token?: string): Promise<number> {
  try {
    const agent = await connectWs(url, { token });
    await agent.close();
    return 101;
  } catch (error) {
    if (error instanceof UpgradeRefused) return error.status;
    throw error;
  }
}

/** A good agent still enrolls (the service is unharmed). */
async function goodAgentEnrolls(): Promise<void> {
  const { token } = await issueToken();
  const uid = newInstanceUid();
  const agent = await connectWs(wsUrl, { token });
  await agent.exchange(hello(uid));
  await agent.close();
  expect((await getAgent(uidToUuid(uid))).status).toBe(200);
}

describe('OpAMP listener: enrollment', () => {
  test('header token over WebSocket: enrolling → online with description, status, heartbeat; close → offline', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const id = uidToUuid(uid);
    const agent = await connectWs(wsUrl, { token: issued.token });
    const reply = await agent.exchange(
      hello(uid, {
        health: { healthy: true, status: 'StatusOK', startTimeUnixNano: 5n },
        remoteConfigStatus: {
          lastRemoteConfigHash: Buffer.from('ab12', 'hex'),
          status: RemoteConfigStatuses.RemoteConfigStatuses_FAILED,
          errorMessage: 'bad exporter',
        },
        effectiveConfig: {
          configMap: { configMap: { '': { body: Buffer.from('receivers: {}\n'), contentType: 'text/yaml' } } },
        },
      }),
    );
    expect(Buffer.from(reply.instanceUid).equals(Buffer.from(uid))).toBe(true);
    expect(
      hasBits(
        reply.capabilities,
        ServerCapability.AcceptsStatus |
          ServerCapability.AcceptsEffectiveConfig |
          ServerCapability.OffersConnectionSettings,
      ),
    ).toBe(true);
    expect(reply.connectionSettings?.opamp?.heartbeatIntervalSeconds).toBe(30n);
    expect(reply.flags).toBe(0n);

    const res = await getAgent(id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      name: 'otelcol-edge',
      groupId: issued.groupId,
      status: 'online',
      description: { 'service.name': 'otelcol-edge', 'service.version': '0.99.0', 'host.name': 'rack12-n3' },
      capabilities: Number(
        AgentCapability.ReportsStatus | AgentCapability.ReportsHealth | AgentCapability.ReportsHeartbeat,
      ),
      applied: { hash: 'ab12', status: 'FAILED', error: 'bad exporter' },
    });
    expect(res.body.lastSeenAt).not.toBeNull();
    const row = await t.database.db('agents').where({ id }).first();
    expect(row.enrolled_with_token_id).toBe(issued.id);
    expect(row.health).toMatchObject({ healthy: true, status: 'StatusOK' });
    expect(row.effective_config_hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await tokenRow(issued.id)).uses).toBe(1);
    expect(await eventTypes(id)).toEqual(['agent.enrolled', 'agent.connected']);

    // In sequence: no full state asked, no second heartbeat offer; a gap asks for full state.
    const next = await agent.exchange({ instanceUid: uid, sequenceNum: 2n });
    expect(next.flags).toBe(0n);
    expect(next.connectionSettings).toBeUndefined();
    const gap = await agent.exchange({ instanceUid: uid, sequenceNum: 7n });
    expect(hasBits(gap.flags, ServerToAgentFlag.ReportFullState)).toBe(true);
    // Compressed status (no description) leaves the stored description alone.
    expect((await getAgent(id)).body.description['host.name']).toBe('rack12-n3');

    await agent.close();
    await eventually(async () => expect((await getAgent(id)).body.status).toBe('offline'));
    expect(await eventTypes(id)).toEqual(['agent.enrolled', 'agent.connected', 'agent.disconnected']);
  });

  test('?token= in the URL enrolls an agent that cannot set headers', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const agent = await connectWs(`${wsUrl}?token=${issued.token}`);
    await agent.exchange(hello(uid));
    expect((await getAgent(uidToUuid(uid))).body.status).toBe('online');
    await agent.close();
  });

  test('HTTP transport: enrolls, and a second poll (gzip) with the same token and uid spends no use', async () => {
    const issued = await issueToken({ maxUses: 1 });
    const uid = newInstanceUid();
    const first = await postHttp(httpUrl, hello(uid), { token: issued.token });
    expect(first.status).toBe(200);
    expect(first.message?.connectionSettings?.opamp?.heartbeatIntervalSeconds).toBe(30n);
    const second = await postHttp(httpUrl, { instanceUid: uid, sequenceNum: 2n }, { token: issued.token, gzip: true });
    expect(second.status).toBe(200);
    expect(second.message?.flags).toBe(0n);
    expect((await tokenRow(issued.id)).uses).toBe(1);
    const res = await getAgent(uidToUuid(uid));
    expect(res.body).toMatchObject({ status: 'online', name: 'otelcol-edge' });
    expect(await eventTypes(uidToUuid(uid))).toEqual(['agent.enrolled', 'agent.connected']);
  });

  test("another token's holder cannot take over a uid whose agent can still prove itself", async () => {
    const mine = await issueToken();
    const theirs = await issueToken();
    const uid = newInstanceUid();
    expect((await postHttp(httpUrl, hello(uid), { token: mine.token })).status).toBe(200);
    const hijack = await postHttp(httpUrl, hello(uid), { token: theirs.token });
    expect(hijack.status).toBe(401);
    expect((await tokenRow(theirs.id)).uses).toBe(0);
    expect((await postHttp(httpUrl, { instanceUid: uid, sequenceNum: 2n }, { token: mine.token })).status).toBe(200);
    // once its own token is revoked, the agent may enroll again with a new one
    await t.call('POST', `/api/tokens/${mine.id}/revoke`, { token: operator });
    expect((await postHttp(httpUrl, hello(uid), { token: theirs.token })).status).toBe(200);
    expect(await agentsOf(theirs.id)).toEqual([uidToUuid(uid)]);
  });

  test('NUL in what an agent reports is stored as U+FFFD, not refused half-way through enrollment', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const res = await postHttp(httpUrl, hello(uid, { agentDescription: description({ 'service.name': 'a\u0000b' }) }), {
      token: issued.token,
    });
    expect(res.status).toBe(200);
    expect((await getAgent(uidToUuid(uid))).body).toMatchObject({ name: 'a\uFFFDb', status: 'online' });
    expect((await postHttp(httpUrl, { instanceUid: uid, sequenceNum: 2n }, { token: issued.token })).status).toBe(200);
  });

  test('an HTTP agent that says goodbye (agent_disconnect) goes offline', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    expect((await postHttp(httpUrl, hello(uid), { token: issued.token })).status).toBe(200);
    expect(
      (await postHttp(httpUrl, { instanceUid: uid, sequenceNum: 2n, agentDisconnect: {} }, { token: issued.token }))
        .status,
    ).toBe(200);
    expect((await getAgent(uidToUuid(uid))).body.status).toBe('offline');
    expect(await eventTypes(uidToUuid(uid))).toEqual(['agent.enrolled', 'agent.connected', 'agent.disconnected']);
  });

  test('a token with maxUses 1 admits its agent again but refuses a second uid on both transports', async () => {
    const issued = await issueToken({ maxUses: 1 });
    const uid = newInstanceUid();
    const agent = await connectWs(wsUrl, { token: issued.token });
    await agent.exchange(hello(uid));
    await agent.close();
    // The bound agent reconnects.
    const again = await connectWs(wsUrl, { token: issued.token });
    await again.exchange(hello(uid));
    await again.close();

    const other = newInstanceUid();
    expect((await postHttp(httpUrl, hello(other), { token: issued.token })).status).toBe(401);
    const ws = await connectWs(wsUrl, { token: issued.token }); // upgrade passes: the token has a bound agent
    ws.send(hello(other));
    expect((await ws.closed).code).toBe(1008);
    expect(await agentsOf(issued.id)).toEqual([uidToUuid(uid)]);
    expect((await tokenRow(issued.id)).uses).toBe(1);
  });

  test('concurrent first messages: one use per new uid, never more than maxUses', async () => {
    const issued = await issueToken({ maxUses: 1 });
    const uids = Array.from({ length: 5 }, newInstanceUid);
    const statuses = await Promise.all(
      uids.map((uid) => postHttp(httpUrl, hello(uid), { token: issued.token }).then((r) => r.status)),
    );
    expect(statuses.sort()).toEqual([200, 401, 401, 401, 401]);
    const same = await issueToken({ maxUses: 2 });
    const uid = newInstanceUid();
    const twice = await Promise.all(
      [1, 2].map(() => postHttp(httpUrl, hello(uid), { token: same.token }).then((r) => r.status)),
    );
    expect(twice).toEqual([200, 200]);
    expect((await tokenRow(same.id)).uses).toBe(1);
    expect((await tokenRow(issued.id)).uses).toBe(1);
  });

  test('missing, malformed and unknown tokens are refused with 401 on both transports', async () => {
    const uid = newInstanceUid();
    const unknown = (await issueToken()).token.replace(/^svc-bt\.[a-z2-7]{32}/, 'svc-bt.' + 'a'.repeat(32));
    for (const token of [undefined, 'svc-bt.nope.xxxxxxx', unknown]) {
      expect(await refusedUpgrade(wsUrl, token)).toBe(401);
      expect((await postHttp(httpUrl, hello(uid), { token })).status).toBe(401);
    }
    expect((await getAgent(uidToUuid(uid))).status).toBe(404);
  });

  test('a revoked token is refused before anything is written, and cuts off its bound agent', async () => {
    const issued = await issueToken({ maxUses: 5 });
    const bound = newInstanceUid();
    expect((await postHttp(httpUrl, hello(bound), { token: issued.token })).status).toBe(200);
    expect((await t.call('POST', `/api/tokens/${issued.id}/revoke`, { token: operator })).status).toBe(200);

    const uid = newInstanceUid();
    expect(await refusedUpgrade(wsUrl, issued.token)).toBe(401);
    expect((await postHttp(httpUrl, hello(uid), { token: issued.token })).status).toBe(401);
    expect((await postHttp(httpUrl, hello(bound), { token: issued.token })).status).toBe(401);
    expect(await agentsOf(issued.id)).toEqual([uidToUuid(bound)]);
    expect((await tokenRow(issued.id)).uses).toBe(1);
  });

  test('a token revoked while the LISTEN connection is down still closes its live session once the listener is back', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const agent = await connectWs(wsUrl, { token: issued.token });
    await agent.exchange(hello(uid));
    // Every listener of this database loses its connection (a failover, a proxy restart):
    // the revocation's notification reaches no one.
    await t.database.db.raw(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fleet-config-listener' AND datname = current_database()`,
    );
    expect((await t.call('POST', `/api/tokens/${issued.id}/revoke`, { token: operator })).status).toBe(200);
    expect(await agent.closed).toEqual({ code: 1008, reason: 'bootstrap token revoked' });
  });

  test('an agent that reconnected to another replica stays online when its old socket closes', async () => {
    const replica = await startTestGateway(t, { plaintext: true });
    try {
      const issued = await issueToken();
      const uid = newInstanceUid();
      const id = uidToUuid(uid);
      const old = await connectWs(wsUrl, { token: issued.token });
      await old.exchange(hello(uid));
      // The agent's network moved it to the other replica before this one noticed the old socket was gone.
      const current = await connectWs(replica.wsUrl, { token: issued.token });
      await current.exchange(hello(uid, { sequenceNum: 2n }));
      await old.close();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await getAgent(id)).body.status).toBe('online');

      await current.close();
      await eventually(async () => expect((await getAgent(id)).body.status).toBe('offline'));
      expect(await eventTypes(id)).toEqual([
        'agent.enrolled',
        'agent.connected',
        'agent.connected',
        'agent.disconnected',
      ]);
    } finally {
      await replica.close();
    }
  });

  test('an expired token refuses new agents but still admits the agent bound to it', async () => {
    const issued = await issueToken({ maxUses: 5 });
    const bound = newInstanceUid();
    expect((await postHttp(httpUrl, hello(bound), { token: issued.token })).status).toBe(200);
    await t.database
      .db('bootstrap_tokens')
      .where({ id: issued.id })
      .update({ expires_at: new Date(Date.now() - 1000) });

    expect((await postHttp(httpUrl, { instanceUid: bound, sequenceNum: 2n }, { token: issued.token })).status).toBe(
      200,
    );
    const ws = await connectWs(wsUrl, { token: issued.token });
    await ws.exchange(hello(bound, { sequenceNum: 3n }));
    await ws.close();

    const fresh = newInstanceUid();
    expect((await postHttp(httpUrl, hello(fresh), { token: issued.token })).status).toBe(401);
    expect(await agentsOf(issued.id)).toEqual([uidToUuid(bound)]);
    expect((await tokenRow(issued.id)).uses).toBe(1);

    const lonely = await issueToken();
    await t.database
      .db('bootstrap_tokens')
      .where({ id: lonely.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect(await refusedUpgrade(wsUrl, lonely.token)).toBe(401);
  });

  test('an instance uid that is not 16 bytes is refused (WebSocket 1007, HTTP 400), nothing stored', async () => {
    const issued = await issueToken();
    const ws = await connectWs(wsUrl, { token: issued.token });
    ws.send(hello(new Uint8Array(8)));
    expect((await ws.closed).code).toBe(1007);
    expect((await postHttp(httpUrl, hello(new Uint8Array(20)), { token: issued.token })).status).toBe(400);
    expect((await tokenRow(issued.id)).uses).toBe(0);
    expect(await agentsOf(issued.id)).toEqual([]);
  });

  test('any 16 bytes are a uid (the spec recommends, but does not require, a UUID v7)', async () => {
    const issued = await issueToken();
    const uid = new Uint8Array(16).fill(0xee);
    expect((await postHttp(httpUrl, hello(uid), { token: issued.token })).status).toBe(200);
    expect(await agentsOf(issued.id)).toEqual(['eeeeeeee-eeee-eeee-eeee-eeeeeeeeeeee']);
  });
});

describe('OpAMP listener: bad input', () => {
  test.each([
    ['a wrong header byte', () => Buffer.from([0x01, 0x0a, 0x00]), 1002],
    ['an empty message', () => Buffer.alloc(0), 1002],
    ['garbage protobuf', () => Buffer.from([0x00, 0x0a, 0xff, 0xff, 0x03, 0x01]), 1007],
    ['an oversize message', () => Buffer.alloc(OPAMP_MAX_MESSAGE_BYTES + 64), 1009],
  ])('%s closes the socket (%#), stores nothing, and the service stays up', async (_name, bytes, code) => {
    const issued = await issueToken();
    const ws = await connectWs(wsUrl, { token: issued.token });
    ws.sendRaw(bytes());
    expect((await ws.closed).code).toBe(code);
    expect((await tokenRow(issued.id)).uses).toBe(0);
    expect(await agentsOf(issued.id)).toEqual([]);
    await goodAgentEnrolls();
  });

  test('capabilities beyond the defined bits (up to 2^64 − 1) keep the defined range; the session carries on', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const all = 2n ** 64n - 1n;
    const agent = await connectWs(wsUrl, { token: issued.token });
    await agent.exchange(hello(uid, { capabilities: all }));
    // the second message is a routine report: the batched path
    await agent.exchange({ instanceUid: uid, sequenceNum: 2n, capabilities: all });
    await agent.close();
    expect((await getAgent(uidToUuid(uid))).body.capabilities).toBe(Number.MAX_SAFE_INTEGER);
  });

  test('a text frame closes the socket with 1003', async () => {
    const issued = await issueToken();
    const ws = await connectWs(wsUrl, { token: issued.token });
    ws.socket.send('hello');
    expect((await ws.closed).code).toBe(1003);
    expect(await agentsOf(issued.id)).toEqual([]);
  });

  test('bad HTTP bodies get 400 / 415, store nothing, and the service stays up', async () => {
    const issued = await issueToken();
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0x03]);
    expect((await postHttp(httpUrl, garbage, { token: issued.token })).status).toBe(400);
    expect((await postHttp(httpUrl, garbage, { token: issued.token, gzip: true })).status).toBe(400);
    const notGzip = await fetch(httpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${issued.token}`,
        'content-type': 'application/x-protobuf',
        'content-encoding': 'gzip',
      },
      body: Buffer.from('not gzip'),
    });
    expect(notGzip.status).toBe(400);
    expect(
      (await postHttp(httpUrl, hello(newInstanceUid()), { token: issued.token, contentType: 'application/json' }))
        .status,
    ).toBe(415);
    expect((await tokenRow(issued.id)).uses).toBe(0);
    expect(await agentsOf(issued.id)).toEqual([]);
    const uid = newInstanceUid();
    expect((await postHttp(httpUrl, hello(uid), { token: issued.token, gzip: true })).status).toBe(200);
  });

  test('only /v1/opamp exists', async () => {
    const { token } = await issueToken();
    expect(await refusedUpgrade(wsUrl.replace('/v1/opamp', '/v1/other'), token)).toBe(404);
    expect((await postHttp(httpUrl.replace('/v1/opamp', '/'), hello(newInstanceUid()), { token })).status).toBe(404);
    expect((await fetch(httpUrl)).status).toBe(405);
  });
});
