/**
 * What real agents ran into: an agent that reconnects to apply every connection settings
 * offer, one that reconnects in a loop whatever it is told (flapping), refusals in the log,
 * and a replica stopping with agents connected. Real listener, real Postgres, real sockets.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { pushConfiguration } from '../../domain/pushes';
import { AgentCapability, type ServerToAgent } from '../../gateway/codec';
import { ServerErrorResponseType } from '../../gateway/gen/opamp_pb';
import { FLAPPING } from '../../gateway/flapping';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { connectWs, description, newInstanceUid, postHttp, uidToUuid } from '../../scripts/agents/opamp-client';
import { SimulatedAgent, SIMULATOR_CAPABILITIES } from '../../scripts/agents/agent';

let t: TestApp;
let operator: string;
let gateway: TestGateway;
const logLines: Array<Record<string, unknown>> = [];
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
  const logs = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  });
  gateway = await startTestGateway(t, { plaintext: true, logger: pino({ level: 'info' }, logs) });
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  await gateway?.close();
  await t?.close();
});

const issueToken = () => issueBootstrapToken(t, operator, { maxUses: 20 });
const eventsOf = (id: string) => t.database.db('events').where({ subject: id }).orderBy('seq');

function agent(options: ConstructorParameters<typeof SimulatedAgent>[0]): SimulatedAgent {
  const created = new SimulatedAgent(options);
  agents.push(created);
  return created;
}

/** One WebSocket session: the first message (full state with `capabilities`), its reply, the close. */
async function session(token: string, uid: Uint8Array, capabilities: bigint) {
  const ws = await connectWs(gateway.wsUrl, { token });
  const reply = await ws
    .exchange({
      instanceUid: uid,
      sequenceNum: 0n,
      capabilities,
      agentDescription: description({ 'service.name': 'loop' }),
    })
    .catch(() => undefined);
  const closed = reply?.errorResponse ? await ws.closed : await ws.close();
  return { reply, closed };
}

describe('connection settings are offered only when they differ from what the agent has', () => {
  test('an agent that reconnects to apply every offer settles after one reconnect; its configuration is sent once', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const id = uidToUuid(uid);
    // Enrolled by a client that reports no heartbeats (so offered nothing), then given a configuration while away.
    await session(issued.token, uid, AgentCapability.ReportsStatus);
    const [v1, v2] = await publishConfiguration(t, operator, ['receivers:\n  otlp: {}\n', 'receivers: {}\n']);
    const push = (version: typeof v1) =>
      t.database.db.transaction((trx) =>
        pushConfiguration(trx, {
          tenantId: 'default',
          agentIds: [id],
          configurationId: version!.configurationId,
          version: version!.version,
        }),
      );
    await push(v1);

    const sim = agent({
      endpoint: gateway.wsUrl,
      token: issued.token,
      instanceUid: uid,
      csr: false,
      reconnectOnEveryOffer: true,
    });
    const replies: ServerToAgent[] = [];
    sim.on('message', (reply: ServerToAgent) => replies.push(reply));
    await sim.start();
    // The reply to a session's first message decides whether the agent reconnects again.
    await sim.waitFor((state) => state.connects === 2 && state.connected && replies.length >= 2);
    expect(replies.filter((reply) => reply.connectionSettings)).toHaveLength(1);
    expect(replies[0]!.connectionSettings?.opamp?.heartbeatIntervalSeconds).toBe(30n);
    // The second client reported an empty status: the configuration it was just sent is not sent again.
    expect(replies.filter((reply) => reply.remoteConfig)).toHaveLength(1);

    // Settled: a later push reaches the same session and is applied there.
    await push(v2);
    await sim.waitFor((state) => state.lastConfigHash === v2!.contentHash && state.appliedStatus === 'APPLIED');
    expect(sim.state.connects).toBe(2);
    const events = (await eventsOf(id)).map((event) => event.type);
    expect(events.filter((type) => type === 'agent.connected')).toHaveLength(3);
    expect(events).not.toContain('agent.flapping');
    const row = await t.database.db('agents').where({ id }).first();
    expect(row).toMatchObject({ status: 'online', settings_offered_hash: expect.any(String) });
  });

  test('the heartbeat interval only for agents that report heartbeats, and once', async () => {
    const issued = await issueToken();
    const quiet = await session(issued.token, newInstanceUid(), AgentCapability.ReportsStatus);
    expect(quiet.reply?.connectionSettings).toBeUndefined();

    const uid = newInstanceUid();
    const first = await session(issued.token, uid, SIMULATOR_CAPABILITIES);
    expect(first.reply?.connectionSettings?.opamp?.heartbeatIntervalSeconds).toBe(30n);
    const again = await session(issued.token, uid, SIMULATOR_CAPABILITIES);
    expect(again.reply?.connectionSettings).toBeUndefined();
  });

  test('an agent reporting the settings as applied is not offered them, the report is stored', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const ws = await connectWs(gateway.wsUrl, { token: issued.token });
    const first = await ws.exchange({ instanceUid: uid, sequenceNum: 0n, capabilities: SIMULATOR_CAPABILITIES });
    const hash = first.connectionSettings!.hash;
    await ws.exchange({
      instanceUid: uid,
      sequenceNum: 1n,
      capabilities: SIMULATOR_CAPABILITIES,
      connectionSettingsStatus: { lastConnectionSettingsHash: hash, status: 1 /* APPLIED */ },
    });
    await ws.close();
    const row = await t.database
      .db('agents')
      .where({ id: uidToUuid(uid) })
      .first();
    expect(row).toMatchObject({
      settings_reported_hash: Buffer.from(hash).toString('hex'),
      settings_reported_status: 'APPLIED',
    });
  });
});

describe('flapping', () => {
  test(`past ${FLAPPING.sessions} sessions a minute an agent is answered with a back-off, once an event`, async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const id = uidToUuid(uid);
    // A well-behaved agent reconnecting after blips is served every time.
    for (let i = 0; i < FLAPPING.sessions; i++) {
      const { reply } = await session(issued.token, uid, SIMULATOR_CAPABILITIES);
      expect(reply?.errorResponse).toBeUndefined();
    }
    for (let i = 0; i < 2; i++) {
      const { reply, closed } = await session(issued.token, uid, SIMULATOR_CAPABILITIES);
      expect(reply?.errorResponse).toMatchObject({
        type: ServerErrorResponseType.ServerErrorResponseType_Unavailable,
        Details: { case: 'retryInfo' },
      });
      const retry = reply!.errorResponse!.Details.value!.retryAfterNanoseconds;
      expect(retry).toBeGreaterThan(0n);
      expect(retry).toBeLessThanOrEqual(BigInt(FLAPPING.backoffSeconds) * 1_000_000_000n);
      expect(closed.code).toBe(1013);
    }
    const polled = await postHttp(gateway.httpUrl, { instanceUid: uid, sequenceNum: 1n }, { token: issued.token });
    expect(polled.status).toBe(503);

    const flapping = (await eventsOf(id)).filter((event) => event.type === 'agent.flapping');
    expect(flapping).toHaveLength(1);
    expect(flapping[0]!.data).toEqual({
      agentId: id,
      sessions: FLAPPING.sessions + 1,
      windowSeconds: FLAPPING.windowSeconds,
      retryAfterSeconds: FLAPPING.backoffSeconds,
    });
    await eventually(async () =>
      expect(await t.database.db('agents').where({ id }).first()).toMatchObject({ status: 'offline' }),
    );
  });
});

describe('refusals in the log', () => {
  test('name the agent and never carry the token', async () => {
    const owner = await issueToken();
    const other = await issueToken();
    const uid = newInstanceUid();
    await session(owner.token, uid, SIMULATOR_CAPABILITIES);
    const refused = await postHttp(gateway.httpUrl, { instanceUid: uid, sequenceNum: 0n }, { token: other.token });
    expect(refused.status).toBe(401);
    const ws = await connectWs(gateway.wsUrl, { token: other.token });
    ws.send({ instanceUid: uid, sequenceNum: 0n });
    expect((await ws.closed).code).toBe(1008);

    const refusals = await eventually(async () => {
      const found = logLines.filter(
        (line) => line.agentId === uidToUuid(uid) && String(line.reason).includes('uid-bound'),
      );
      expect(found).toHaveLength(2);
      return found;
    });
    expect(refusals.map((line) => line.tokenId)).toEqual([other.id, other.id]);
    for (const line of logLines) {
      expect(JSON.stringify(line)).not.toContain(owner.token);
      expect(JSON.stringify(line)).not.toContain(other.token);
    }
  });
});

describe('a replica stopping', () => {
  test('closes agent sockets at once with 1001 and marks the agents offline', async () => {
    const own = await startTestGateway(t, { plaintext: true });
    const issued = await issueToken();
    const sims = [0, 1, 2].map(() =>
      agent({ endpoint: own.wsUrl, token: issued.token, csr: false, reconnectMinMs: 60_000 }),
    );
    await Promise.all(sims.map((sim) => sim.start()));
    await Promise.all(sims.map((sim) => sim.waitFor((state) => state.connected)));

    await own.close();
    for (const sim of sims) expect(sim.state.lastClose?.code).toBe(1001);
    for (const sim of sims) {
      expect(await t.database.db('agents').where({ id: sim.id }).first()).toMatchObject({ status: 'offline' });
      const last = (await eventsOf(sim.id)).at(-1);
      expect(last).toMatchObject({ type: 'agent.disconnected', data: { reason: 'websocket closed (1001)' } });
    }
  });
});
