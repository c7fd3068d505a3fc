/**
 * The agent side of a handover (docs/federation.md, "What the agent sees"), end to end over
 * real sockets between two installations: the sender's gateway offers a live agent the
 * receiver through OpAMP connection settings, the simulator follows the offer as OpAMP agents
 * do, and the receiver admits exactly the handed agents. The rows the handover workflow's
 * activities write are written here through the same repos, then NOTIFYed.
 */
import { randomUUID } from 'node:crypto';
import { notifyAgentCutoff, notifyAgentHandover } from '../../db/notify';
import { insertBootstrapToken } from '../../db/repos/bootstrap-tokens';
import {
  insertHandover,
  markHandedOver,
  offerToConnectedAgents,
  setHandoverOffer,
  withdrawOffered,
} from '../../db/repos/handovers';
import { insertIncomingHandover, setIncomingBootstrapToken } from '../../db/repos/incoming-handovers';
import { x509 } from '../../domain/certificates/x509';
import { offeredCaBundle, sealOffer, type HandoverOffer } from '../../domain/federation/handover-offer';
import { generateToken, hashToken } from '../../domain/tokens/secret-token';
import { handoverSettingsHash } from '../../gateway/handover-offers';
import { AgentCapability, decodeServerToAgent, unframeWebSocket } from '../../gateway/codec';
import { ConnectionSettingsStatuses, type ServerToAgent } from '../../gateway/gen/opamp_pb';
import { HANDED_OVER_REASON } from '../../gateway/sessions';
import { encryptionKey } from '../../platform/secrets';
import { issueBootstrapToken, startTestGateway } from '../support/agent-gateway';
import { eventually } from '../support/eventually';
import { startInstallation, type Installation } from '../support/federation';
import { capturedLogger } from '../support/logs';
import { connectWs, description, newInstanceUid, uidToUuid } from '../../scripts/agents/opamp-client';
import { SimulatedAgent } from '../../scripts/agents/agent';
import type { SimulatedAgentOptions } from '../../scripts/agents/agent-state';
import { freePort } from '../support/processes';

const WITHDRAWN = { withdrawn: 'the receiver never saw it', missing: 'not seen since the offer' };

let sender: Installation;
let receiver: Installation;
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  [sender, receiver] = await Promise.all([startInstallation('sender'), startInstallation('receiver')]);
}, 60_000);
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
});
afterAll(async () => {
  await Promise.all([sender?.close(), receiver?.close()]);
});

/** An agent enrolled on the sender, connected over mTLS with the sender's certificate. */
async function agentOnSender(options: Partial<SimulatedAgentOptions> = {}): Promise<SimulatedAgent> {
  const issued = await issueBootstrapToken(sender.t, sender.operator);
  const agent = new SimulatedAgent({
    endpoint: sender.gateway.wsUrl,
    token: issued.token,
    ca: sender.gateway.ca.certificatePem,
    reconnectMinMs: 50,
    ...options,
  });
  agents.push(agent);
  await agent.start();
  await agent.waitFor((s) => s.connected && (options.csr === false || s.mtls), 15_000);
  return agent;
}

/**
 * What the receiver's redemption leaves (issue 13 point 3): an incoming handover naming the
 * agents and the bootstrap token only they may enrol with. Returns the token and the handover.
 */
async function receiverExpects(agentIds: string[]): Promise<{ token: string; incomingId: string; groupId: string }> {
  const db = receiver.t.database.db;
  const groupId = (
    await receiver.t.call('POST', '/api/groups', {
      token: receiver.operator,
      body: { name: `received-${randomUUID().slice(0, 8)}` },
    })
  ).body.id as string;
  const token = generateToken('svc-bt');
  const incomingId = randomUUID();
  await db.transaction(async (trx) => {
    await insertIncomingHandover(trx, {
      id: incomingId,
      tenant_id: 'default',
      requested_by: 'peer-sender',
      agent_ids: agentIds,
      token_hash: hashToken(generateToken('svc-ho')),
      token_expires_at: new Date(Date.now() + 3_600_000),
      deadline_at: new Date(Date.now() + 600_000),
    });
    const bootstrap = await insertBootstrapToken(trx, {
      tenant_id: 'default',
      name: `handover-${incomingId}`,
      token_hash: hashToken(token),
      group_id: groupId,
      pool_id: null,
      expires_at: new Date(Date.now() + 3_600_000),
      max_uses: agentIds.length,
      created_by: 'peer-sender',
      agent_ids: agentIds,
    });
    await setIncomingBootstrapToken(trx, incomingId, bootstrap.id);
  });
  return { token, incomingId, groupId };
}

/** The sender's side, as the workflow's activities write it: the sealed offer, its agents offered, NOTIFY. */
async function offerOnSender(agentIds: string[], offer: HandoverOffer): Promise<string> {
  const db = sender.t.database.db;
  const handoverId = randomUUID();
  await db.transaction(async (trx) => {
    await insertHandover(
      trx,
      {
        id: handoverId,
        tenant_id: 'default',
        peer_id: null,
        peer_name: 'receiver',
        deadline_seconds: 600,
        created_by: 'test',
      },
      agentIds,
    );
    await setHandoverOffer(trx, handoverId, sealOffer(encryptionKey(sender.t.settings), handoverId, offer));
    const offered = await offerToConnectedAgents(trx, handoverId);
    expect(offered.sort()).toEqual([...agentIds].sort());
    await notifyAgentHandover(trx, offered);
  });
  return handoverId;
}

const receiverOffer = (token: string): HandoverOffer => ({
  endpoint: receiver.gateway.wsUrl,
  caPem: receiver.gateway.ca.certificatePem,
  token,
});

/** Every ServerToAgent the agent gets from now on. */
function messagesOf(agent: SimulatedAgent): ServerToAgent[] {
  const seen: ServerToAgent[] = [];
  agent.on('message', (message: ServerToAgent) => seen.push(message));
  return seen;
}

const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('hex');
const agentOn = (inst: Installation, id: string) =>
  inst.t.call('GET', `/api/agents/${id}`, { token: inst.operator }).then((res) => res.body);

// WebSocket: offered at once, on the notification. HTTP: in the reply to its next poll.
test.each(['ws', 'http'] as const)(
  'a live agent (%s) offered the receiver moves there: same id, a leaf of the receiver CA, mTLS; the sender sees it go',
  async (transport) => {
    const agent = await agentOnSender(
      transport === 'ws' ? {} : { endpoint: sender.gateway.httpUrl, heartbeatSeconds: 0.2 },
    );
    const senderSerial = agent.state.certificate!.serial;
    const { token, incomingId, groupId } = await receiverExpects([agent.id]);

    await offerOnSender([agent.id], receiverOffer(token));

    await agent.waitFor(
      (s) => s.endpoint === receiver.gateway.wsUrl && s.mtls && s.connected && s.certificate !== undefined,
      20_000,
    );
    const leaf = new x509.X509Certificate(agent.state.certificate!.certPem);
    expect(
      await leaf.verify({ publicKey: new x509.X509Certificate(receiver.gateway.ca.certificatePem).publicKey }),
    ).toBe(true);
    expect(agent.state.certificate!.serial).not.toBe(senderSerial);
    await eventually(async () =>
      expect(await agentOn(receiver, agent.id)).toMatchObject({
        id: agent.id,
        status: 'online',
        groupId,
        certificate: { serial: agent.state.certificate!.serial.toLowerCase(), revokedAt: null },
      }),
    );
    // An HTTP agent has no socket to close: it is offline here once it stops polling (three heartbeats).
    if (transport === 'ws')
      await eventually(async () => expect(await agentOn(sender, agent.id)).toMatchObject({ status: 'offline' }));
    const received = await receiver.t.database
      .db('events')
      .where({ type: 'federation.handover.agent-received', subject: incomingId });
    expect(received.map((event) => event.data)).toEqual([{ agentId: agent.id }]);
  },
  40_000,
);

test('an agent offered an unreachable receiver goes back to the sender, reports the offer FAILED, and is not offered it again', async () => {
  const agent = await agentOnSender();
  const messages = messagesOf(agent);
  const unreachable = `wss://127.0.0.1:${await freePort()}/v1/opamp`;
  const handoverId = await offerOnSender([agent.id], {
    ...receiverOffer(generateToken('svc-bt')),
    endpoint: unreachable,
  });

  const heartbeatSeconds = sender.gateway.settings.agents.heartbeatSeconds;
  const offerHash = handoverSettingsHash(handoverId, heartbeatSeconds);
  await agent.waitFor((s) => s.settingsFailed?.hash === offerHash && s.connected && s.mtls, 20_000);
  expect(agent.state.endpoint).toBe(sender.gateway.wsUrl);
  expect(agent.state.settingsFailed!.error).toMatch(/ECONNREFUSED/);
  await eventually(async () => {
    expect(await agentOn(sender, agent.id)).toMatchObject({ status: 'online' });
    const row = await sender.t.database.db('agents').where({ id: agent.id }).first();
    expect(row).toMatchObject({ settings_reported_hash: offerHash, settings_reported_status: 'FAILED' });
  });
  const offers = messages.filter((m) => m.connectionSettings?.opamp?.destinationEndpoint === unreachable);
  expect(offers).toHaveLength(1);

  // Heartbeats answered from now on carry no offer: it was made once.
  agent.setHeartbeatSeconds(0.2);
  const after = messages.length;
  await eventually(async () => expect(messages.length).toBeGreaterThan(after + 3));
  expect(messages.filter((m) => m.connectionSettings?.opamp?.destinationEndpoint === unreachable)).toHaveLength(1);
}, 40_000);

test('an instance uid the handover token does not list is refused by the receiver as a wrong token is, logged by uid, never the token', async () => {
  const listedUid = newInstanceUid();
  const listed = uidToUuid(listedUid);
  const { token } = await receiverExpects([listed]);
  const { logger, lines } = capturedLogger('info');
  const replica = await startTestGateway(receiver.t, { logger });
  try {
    for (const transport of ['ws', 'http'] as const) {
      const stranger = new SimulatedAgent({
        endpoint: transport === 'ws' ? replica.wsUrl : replica.httpUrl,
        token,
        ca: replica.ca.certificatePem,
        csr: false,
      });
      agents.push(stranger);
      await stranger.start();
      const refused = await stranger.waitFor((s) => s.refused !== undefined);
      expect(refused.refused).toEqual(
        transport === 'ws' ? { code: 1008, reason: 'refused: unknown' } : { status: 401, reason: 'refused: unknown\n' },
      );
      expect(await receiver.t.database.db('agents').where({ id: stranger.id }).first()).toBeUndefined();
      await eventually(async () =>
        expect(lines.some((line) => line.includes(stranger.id) && line.includes('uid-not-listed'))).toBe(true),
      );
    }
    expect(lines.join('')).not.toContain(token);
    // The refusals spent nothing: the listed agent still enrols with the single-use token.
    const welcome = new SimulatedAgent({
      endpoint: replica.wsUrl,
      token,
      ca: replica.ca.certificatePem,
      csr: false,
      instanceUid: listedUid,
    });
    agents.push(welcome);
    await welcome.start();
    await welcome.waitFor((s) => s.connected);
  } finally {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    await replica.close();
  }
}, 30_000);

test('the handed-over cut-off closes the sender session (1008) and the agent is refused when it comes back', async () => {
  const agent = await agentOnSender({ csr: false, followOffers: false });
  const { token } = await receiverExpects([agent.id]);
  const handoverId = await offerOnSender([agent.id], receiverOffer(token));

  await sender.t.database.db.transaction(async (trx) => {
    expect(await markHandedOver(trx, handoverId, [agent.id])).toEqual([agent.id]);
    await notifyAgentCutoff(trx, { action: 'handed-over', agentId: agent.id });
  });
  await agent.waitFor((s) => s.refused !== undefined);
  expect(agent.state.refused).toEqual({ code: 1008, reason: HANDED_OVER_REASON });
  expect(await agentOn(sender, agent.id)).toMatchObject({ status: 'handed-over' });

  const again = new SimulatedAgent({
    endpoint: sender.gateway.wsUrl,
    token: agent.options.token,
    ca: sender.gateway.ca.certificatePem,
    csr: false,
    instanceUid: Buffer.from(agent.id.replaceAll('-', ''), 'hex'),
  });
  agents.push(again);
  await again.start();
  await again.waitFor((s) => s.refused !== undefined);
  expect(again.state.refused).toEqual({ code: 1008, reason: 'refused: agent-revoked' });
  expect(again.state.connected).toBe(false);
}, 30_000);

test('an offer carries the receiver (endpoint, bearer token, CA to trust); withdrawn, the agent is offered its own settings again', async () => {
  // On a replica of the sender whose log is read: the offer is logged, its token never.
  const { logger, lines } = capturedLogger('info');
  const replica = await startTestGateway(sender.t, { logger });
  const agent = await agentOnSender({ followOffers: false, endpoint: replica.wsUrl });
  const messages = messagesOf(agent);
  const { token } = await receiverExpects([agent.id]);
  const handoverId = await offerOnSender([agent.id], receiverOffer(token));
  const heartbeatSeconds = sender.gateway.settings.agents.heartbeatSeconds;

  const offered = await eventually(async () => {
    const found = messages.find((m) => m.connectionSettings?.opamp?.destinationEndpoint);
    expect(found).toBeDefined();
    return found!.connectionSettings!;
  });
  expect(hex(offered.hash)).toBe(handoverSettingsHash(handoverId, heartbeatSeconds));
  expect(offered.opamp).toMatchObject({
    destinationEndpoint: receiver.gateway.wsUrl,
    headers: { headers: [{ key: 'Authorization', value: `Bearer ${token}` }] },
    // The receiver's CA and ours: an agent that applies only the CA still reaches us.
    tls: { caPemContents: offeredCaBundle(receiver.gateway.ca.certificatePem, sender.gateway.ca.certificatePem) },
    heartbeatIntervalSeconds: BigInt(heartbeatSeconds),
  });
  expect(offered.opamp!.certificate).toBeUndefined();

  const before = messages.length;
  await sender.t.database.db.transaction(async (trx) => {
    expect(await withdrawOffered(trx, handoverId, WITHDRAWN)).toEqual([agent.id]);
    await notifyAgentHandover(trx, [agent.id]);
  });
  const standing = await eventually(async () => {
    const found = messages.slice(before).find((m) => m.connectionSettings);
    expect(found).toBeDefined();
    return found!.connectionSettings!;
  });
  // Its own settings: our heartbeat, and our CA to trust again (no endpoint: see docs/federation.md).
  expect(standing.opamp).toMatchObject({
    destinationEndpoint: '',
    heartbeatIntervalSeconds: BigInt(heartbeatSeconds),
    tls: { caPemContents: sender.gateway.ca.certificatePem },
  });
  expect(standing.opamp!.headers).toBeUndefined();
  expect(hex(standing.hash)).not.toBe(hex(offered.hash));
  expect(agent.state.connected).toBe(true);
  expect(lines.filter((line) => line.includes('connection settings offered') && line.includes(agent.id))).toHaveLength(
    2,
  );
  expect(lines.join('')).not.toContain(token);
  await agent.stop();
  await replica.close();
}, 30_000);

test('an agent that reported its settings applied is offered them again once its handover offer is withdrawn', async () => {
  const issued = await issueBootstrapToken(sender.t, sender.operator);
  const ws = await connectWs(sender.gateway.wsUrl, { token: issued.token, ca: sender.gateway.ca.certificatePem });
  const unasked: ServerToAgent[] = [];
  const uid = newInstanceUid();
  const capabilities =
    AgentCapability.ReportsStatus |
    AgentCapability.AcceptsOpAMPConnectionSettings |
    AgentCapability.ReportsHeartbeat |
    AgentCapability.ReportsConnectionSettingsStatus;
  try {
    const first = await ws.exchange({
      instanceUid: uid,
      sequenceNum: 0n,
      capabilities,
      agentDescription: description({ 'service.name': 'otelcol' }),
    });
    const standingHash = first.connectionSettings!.hash;
    const applied = await ws.exchange({
      instanceUid: uid,
      sequenceNum: 1n,
      connectionSettingsStatus: {
        lastConnectionSettingsHash: standingHash,
        status: ConnectionSettingsStatuses.ConnectionSettingsStatuses_APPLIED,
      },
    });
    expect(applied.connectionSettings).toBeUndefined();
    ws.socket.on('message', (data) => unasked.push(decodeServerToAgent(unframeWebSocket(data as Buffer))));

    const agentId = uidToUuid(uid);
    const { token } = await receiverExpects([agentId]);
    const handoverId = await offerOnSender([agentId], receiverOffer(token));
    await eventually(async () => expect(unasked).toHaveLength(1));
    expect(unasked[0]!.connectionSettings!.opamp!.destinationEndpoint).toBe(receiver.gateway.wsUrl);

    await sender.t.database.db.transaction(async (trx) => {
      await withdrawOffered(trx, handoverId, WITHDRAWN);
      await notifyAgentHandover(trx, [agentId]);
    });
    await eventually(async () => expect(unasked).toHaveLength(2));
    expect(hex(unasked[1]!.connectionSettings!.hash)).toBe(hex(standingHash));
    expect(unasked[1]!.connectionSettings!.opamp!.destinationEndpoint).toBe('');
    expect(unasked[1]!.connectionSettings!.opamp!.tls?.caPemContents).toBe(sender.gateway.ca.certificatePem);
  } finally {
    await ws.close();
  }
}, 30_000);

test('an offer made while the LISTEN connection is down reaches the agent once the listener is back', async () => {
  const agent = await agentOnSender({ followOffers: false, csr: false });
  const messages = messagesOf(agent);
  const { token } = await receiverExpects([agent.id]);
  // Every listener of the sender's database loses its connection: the offer's notification reaches no one.
  await sender.t.database.db.raw(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'fleet-config-listener' AND datname = current_database()`,
  );
  await offerOnSender([agent.id], receiverOffer(token));
  await eventually(
    async () =>
      expect(messages.some((m) => m.connectionSettings?.opamp?.destinationEndpoint === receiver.gateway.wsUrl)).toBe(
        true,
      ),
    10_000,
  );
}, 30_000);
