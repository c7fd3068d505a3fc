/**
 * The agent gateway over TLS, end to end over real sockets (docs/agent-gateway.md): CSR →
 * mTLS on both transports, foreign certificates, bad CSRs, cut-offs (certificate and token
 * revocation), push to offline agents, configuration outcomes, approval mode and liveness.
 * The agent is the simulator wherever it fits; raw `ws` / `https` clients send what it will not.
 * The plain-TCP protocol is in opamp-listener.test.ts, the simulator itself in simulator.test.ts.
 */
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import tls, { type TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import {
  decodeServerToAgent,
  encodeAgentToServer,
  frameWebSocket,
  unframeWebSocket,
  type ServerToAgent,
} from '../../gateway/codec';
import { notifyAgentCutoff } from '../../db/notify';
import { revokeAgent } from '../../db/repos/agents';
import { configOutcomes, pushConfiguration, type PushResult } from '../../domain/pushes';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { foreignCertificate, type ClientCertificate } from '../support/tls';
import { publishConfiguration, type PublishedVersion } from '../support/configurations';
import { eventually } from '../support/eventually';
import { description, newInstanceUid, uidToUuid, type AgentMessage } from '../../scripts/agents/opamp-client';
import { generateCsr } from '../../scripts/agents/csr';
import { runFleet, type Fleet } from '../../scripts/agents/fleet';
import { SimulatedAgent } from '../../scripts/agents/agent';
import type { SimulatedAgentOptions } from '../../scripts/agents/agent-state';

let t: TestApp;
let operator: string;
let admin: string;
let gateway: TestGateway;
let caPem: string;
const agents: SimulatedAgent[] = [];
const fleets: Fleet[] = [];

beforeAll(async () => {
  t = await startTestApp();
  [operator, admin] = await Promise.all([t.token('default.operator'), t.token('default.admin')]);
  gateway = await startTestGateway(t);
  caPem = gateway.ca.certificatePem;
});
afterAll(async () => {
  await Promise.all([...agents.map((sim) => sim.stop()), ...fleets.map((fleet) => fleet.stop())]);
  await gateway?.close();
  await t?.close();
});

// ---------------------------------------------------------------------------------------
// Helpers

const issueToken = (body: Record<string, unknown> = {}) => issueBootstrapToken(t, operator, body);

const getAgent = (id: string) => t.call('GET', `/api/agents/${id}`, { token: operator });
const agentRow = (id: string) => t.database.db('agents').where({ id }).first();
const certificateRows = (id: string) =>
  t.database.db('agent_certificates').where({ agent_id: id }).orderBy('created_at');
const eventsOf = (id: string) => t.database.db('events').where({ subject: id }).orderBy('seq');
const tokenUses = async (id: string) => (await t.database.db('bootstrap_tokens').where({ id }).first()).uses as number;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Queries of this test database waiting on a lock. */
async function lockWaiters(): Promise<number> {
  const { rows } = await t.database.db.raw(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
  );
  return rows[0].n;
}
const uidOf = (id: string) => new Uint8Array(Buffer.from(id.replaceAll('-', ''), 'hex'));

function agent(options: SimulatedAgentOptions): SimulatedAgent {
  const created = new SimulatedAgent({ ca: caPem, reconnectMinMs: 50, reconnectMaxMs: 200, ...options });
  agents.push(created);
  return created;
}

async function fleet(options: Parameters<typeof runFleet>[0]): Promise<Fleet> {
  const started = await runFleet({ ca: caPem, reconnectMinMs: 50, reconnectMaxMs: 200, ...options });
  fleets.push(started);
  return started;
}

async function push(version: PublishedVersion, agentIds: string[]): Promise<PushResult> {
  return t.database.db.transaction((trx) =>
    pushConfiguration(trx, {
      tenantId: 'default',
      agentIds,
      configurationId: version.configurationId,
      version: version.version,
    }),
  );
}

function hello(uid: Uint8Array, extra: Partial<AgentMessage> = {}): AgentMessage {
  return {
    instanceUid: uid,
    sequenceNum: 0n,
    agentDescription: description({ 'service.name': 'raw-client' }),
    ...extra,
  } as AgentMessage;
}

const withCsr = (uid: Uint8Array, csrPem: string): AgentMessage =>
  hello(uid, { connectionSettingsRequest: { opamp: { certificateRequest: { csr: Buffer.from(csrPem) } } } });

interface Close {
  code: number;
  reason: string;
}

/** What a raw TLS WebSocket attempt came to: admitted to the upgrade, answered by HTTP, or dropped. */
type WsAttempt =
  | { kind: 'open'; send(message: AgentMessage): void; replies: ServerToAgent[]; closed: Promise<Close>; close(): void }
  | { kind: 'http'; status: number }
  | { kind: 'dropped'; error: string };

function wssAttempt(url: string, options: { token?: string; client?: ClientCertificate } = {}): Promise<WsAttempt> {
  const headers = options.token ? { authorization: `Bearer ${options.token}` } : undefined;
  const socket = new WebSocket(url, {
    ca: caPem,
    headers,
    ...options.client,
    handshakeTimeout: 5000,
    perMessageDeflate: false,
  });
  const replies: ServerToAgent[] = [];
  socket.on('message', (data) => replies.push(decodeServerToAgent(unframeWebSocket(data as Buffer))));
  const closed = new Promise<Close>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return new Promise((resolve) => {
    socket.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve({ kind: 'http', status: res.statusCode ?? 0 });
      socket.terminate();
    });
    socket.once('error', (error) => resolve({ kind: 'dropped', error: error.message }));
    socket.once('open', () =>
      resolve({
        kind: 'open',
        replies,
        closed,
        send: (message) => socket.send(frameWebSocket(encodeAgentToServer(message))),
        close: () => socket.close(1000),
      }),
    );
  });
}

type HttpsResult =
  { kind: 'reply'; status: number; message?: ServerToAgent; socket: Socket } | { kind: 'dropped'; error: string };

/** One OpAMP POST over HTTPS (fetch cannot be given our CA or a client certificate). */
function postHttps(
  url: string,
  message: AgentMessage,
  options: { token?: string; client?: ClientCertificate; agent?: https.Agent } = {},
): Promise<HttpsResult> {
  const body = Buffer.from(encodeAgentToServer(message));
  const headers: Record<string, string | number> = {
    'content-type': 'application/x-protobuf',
    'content-length': body.length,
  };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  return new Promise((resolve) => {
    const req = https.request(
      url,
      { method: 'POST', headers, ca: caPem, ...options.client, agent: options.agent ?? false, timeout: 5000 },
      (res) => {
        const socket = res.socket; // null once a keep-alive socket goes back to its pool
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          resolve({ kind: 'reply', status, message: status === 200 ? decodeServerToAgent(bytes) : undefined, socket });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error) => resolve({ kind: 'dropped', error: error.message }));
    req.end(body);
  });
}

/** A refused certificate: the connection is dropped at the handshake, or the request is 401. */
function expectRefused(result: WsAttempt | HttpsResult): void {
  if (result.kind === 'dropped') return expectDroppedByServer(result);
  expect(result).toMatchObject({ status: 401 });
}

/** The TLS connection was made, then closed by the server without an answer (not a client-side TLS failure). */
function expectDroppedByServer(result: WsAttempt | HttpsResult): void {
  expect(result).toEqual({ kind: 'dropped', error: expect.stringMatching(/socket hang up|ECONNRESET/) });
}

/** Records what each WebSocket upgrade and HTTP request reaching the gateway carried. */
function recordRequests(gw: TestGateway) {
  const seen: Array<{ kind: 'upgrade' | 'request'; authorization?: string; url?: string; peerSerial?: string }> = [];
  const record = (kind: 'upgrade' | 'request') => (req: IncomingMessage) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    seen.push({
      kind,
      authorization: req.headers.authorization,
      url: req.url,
      peerSerial: peer?.serialNumber?.toLowerCase(),
    });
  };
  const onUpgrade = record('upgrade');
  const onRequest = record('request');
  gw.listener.server.prependListener('upgrade', onUpgrade);
  gw.listener.server.prependListener('request', onRequest);
  return {
    seen,
    stop: () => {
      gw.listener.server.off('upgrade', onUpgrade);
      gw.listener.server.off('request', onRequest);
    },
  };
}

const clientCertificateOf = (sim: SimulatedAgent): ClientCertificate => ({
  cert: sim.state.certificate!.certPem,
  key: sim.state.certificate!.keyPem,
});

/** Collects the close codes of an agent's WebSockets from now on. */
function closesOf(sim: SimulatedAgent): Close[] {
  const closes: Close[] = [];
  sim.on('closed', (close: Close) => closes.push(close));
  return closes;
}

// ---------------------------------------------------------------------------------------

describe('CSR → mTLS', () => {
  test('over WebSocket: the reconnection presents the certificate and no token; the API shows the certificate, online', async () => {
    const issued = await issueToken();
    const requests = recordRequests(gateway);
    try {
      const sim = agent({ endpoint: gateway.wsUrl, token: issued.token, serviceName: 'mtls-ws' });
      await sim.start();
      await sim.waitFor((state) => state.mtls && state.connected);
      const serial = sim.state.certificate!.serial.toLowerCase();

      const upgrades = requests.seen.filter((seen) => seen.kind === 'upgrade');
      expect(upgrades).toEqual([
        { kind: 'upgrade', authorization: `Bearer ${issued.token}`, url: '/v1/opamp', peerSerial: undefined },
        { kind: 'upgrade', authorization: undefined, url: '/v1/opamp', peerSerial: serial },
      ]);
      const res = await getAgent(sim.id);
      expect(res.body).toMatchObject({ name: 'mtls-ws', status: 'online', certificate: { serial, revokedAt: null } });
      const [row] = await certificateRows(sim.id);
      expect(row).toMatchObject({ serial, tenant_id: 'default', revoked_at: null });
      expect(new Date(res.body.certificate.notAfter).getTime()).toBe(row.not_after.getTime());
    } finally {
      requests.stop();
    }
  });

  test('over HTTPS polling: later polls carry only the certificate, and a push arrives in a poll reply', async () => {
    const issued = await issueToken();
    const [published] = await publishConfiguration(t, operator, ['receivers:\n  otlp: {}\n']);
    const requests = recordRequests(gateway);
    try {
      const sim = agent({
        endpoint: gateway.httpUrl,
        token: issued.token,
        heartbeatSeconds: 1,
        serviceName: 'mtls-http',
      });
      await sim.start();
      await sim.waitFor((state) => state.mtls && state.connected);
      const serial = sim.state.certificate!.serial.toLowerCase();
      const polls = requests.seen.filter((seen) => seen.kind === 'request');
      const firstMtls = polls.findIndex((seen) => seen.peerSerial === serial);
      expect(firstMtls).toBeGreaterThan(0);
      expect(polls.slice(0, firstMtls).every((seen) => seen.authorization === `Bearer ${issued.token}`)).toBe(true);
      expect(polls.slice(firstMtls).every((seen) => seen.authorization === undefined)).toBe(true);
      expect((await getAgent(sim.id)).body).toMatchObject({ status: 'online', certificate: { serial } });

      const pushed = await push(published!, [sim.id]);
      expect(pushed).toEqual({ hash: published!.contentHash, agentIds: [sim.id] });
      await sim.waitFor((state) => state.appliedStatus === 'APPLIED', 5000);
      expect(sim.state.lastConfigHash).toBe(published!.contentHash);
      await eventually(async () =>
        expect((await getAgent(sim.id)).body.applied).toEqual({
          configurationId: published!.configurationId,
          version: published!.version,
          hash: published!.contentHash,
          status: 'APPLIED',
          error: null,
        }),
      );
      const afterPush = requests.seen.filter((seen) => seen.kind === 'request').slice(firstMtls);
      expect(afterPush.every((seen) => seen.authorization === undefined && seen.peerSerial === serial)).toBe(true);
      expect(sim.state.errors).toBe(0);
    } finally {
      requests.stop();
    }
  });

  test('once an agent has connected with its certificate, its token no longer admits it; until then it does (a lost reply must not lock it out)', async () => {
    const issued = await issueToken({ maxUses: 1 });
    const uid = newInstanceUid();
    const id = uidToUuid(uid);
    const { csrPem, keyPem } = await generateCsr(id);
    const enrolled = await postHttps(gateway.httpUrl, withCsr(uid, csrPem), { token: issued.token });
    if (enrolled.kind !== 'reply' || !enrolled.message) throw new Error(`enrolment: ${JSON.stringify(enrolled)}`);
    const cert = Buffer.from(enrolled.message.connectionSettings!.opamp!.certificate!.cert).toString();

    // Say the reply never reached the agent: it comes back with its token, and is let in.
    expect(await postHttps(gateway.httpUrl, hello(uid, { sequenceNum: 1n }), { token: issued.token })).toMatchObject({
      kind: 'reply',
      status: 200,
    });
    // It connects with the certificate once...
    expect(
      await postHttps(gateway.httpUrl, hello(uid, { sequenceNum: 2n }), { client: { cert, key: keyPem } }),
    ).toMatchObject({ kind: 'reply', status: 200 });
    // ...and from then on the token (a whole fleet's, maybe) does not speak for it, on either transport.
    expect(await postHttps(gateway.httpUrl, hello(uid, { sequenceNum: 3n }), { token: issued.token })).toMatchObject({
      kind: 'reply',
      status: 401,
    });
    const ws = await wssAttempt(gateway.wsUrl, { token: issued.token });
    if (ws.kind !== 'open') throw new Error(`upgrade: ${JSON.stringify(ws)}`);
    ws.send(hello(uid, { sequenceNum: 4n }));
    expect(await ws.closed).toEqual({ code: 1008, reason: 'refused: certificate-required' });
    expect(
      await postHttps(gateway.httpUrl, hello(uid, { sequenceNum: 5n }), { client: { cert, key: keyPem } }),
    ).toMatchObject({ kind: 'reply', status: 200 });
    expect((await getAgent(id)).body).toMatchObject({ status: 'online', certificate: { revokedAt: null } });
  });

  test('a certificate from another CA (same CA name) is dropped right after the handshake, even with a good token; nothing is stored', async () => {
    const issued = await issueToken();
    const uid = newInstanceUid();
    const id = uidToUuid(uid);
    const forged = await foreignCertificate(gateway.ca, id);

    expectDroppedByServer(await wssAttempt(gateway.wsUrl, { token: issued.token, client: forged }));
    expectDroppedByServer(await postHttps(gateway.httpUrl, hello(uid), { token: issued.token, client: forged }));

    expect((await getAgent(id)).status).toBe(404);
    expect(await agentRow(id)).toBeUndefined();
    expect(await certificateRows(id)).toEqual([]);
    expect(await eventsOf(id)).toEqual([]);
    expect(await tokenUses(issued.id)).toBe(0);

    // The same token without the forged certificate, and a good agent, still work.
    const good = agent({ endpoint: gateway.wsUrl, token: issued.token });
    await good.start();
    await good.waitFor((state) => state.mtls && state.connected);
    expect((await getAgent(good.id)).body.status).toBe('online');
  });

  test.each([
    ['WebSocket', 'ws'],
    ['HTTP', 'http'],
  ])(
    "a CSR naming another agent's uid in the first message (%s) is refused before admission: nothing stored",
    async (_name, transport) => {
      const victimToken = await issueToken();
      const victim = agent({ endpoint: gateway.wsUrl, token: victimToken.token, csr: false });
      await victim.start();
      expect(victim.state.connected).toBe(true);

      const issued = await issueToken();
      const uid = newInstanceUid();
      const id = uidToUuid(uid);
      const { csrPem } = await generateCsr(victim.id);
      if (transport === 'ws') {
        const ws = await wssAttempt(gateway.wsUrl, { token: issued.token });
        if (ws.kind !== 'open') throw new Error(`upgrade: ${JSON.stringify(ws)}`);
        ws.send(withCsr(uid, csrPem));
        const closed = await ws.closed;
        expect(closed.code).toBe(1008);
        expect(closed.reason).toMatch(/^CSR refused: .*names instance uid/);
        expect(ws.replies).toEqual([]);
      } else {
        expect(await postHttps(gateway.httpUrl, withCsr(uid, csrPem), { token: issued.token })).toMatchObject({
          kind: 'reply',
          status: 400,
        });
      }

      expect(await agentRow(id)).toBeUndefined();
      expect(await certificateRows(id)).toEqual([]);
      expect(await certificateRows(victim.id)).toEqual([]);
      expect(await eventsOf(id)).toEqual([]);
      expect(await tokenUses(issued.id)).toBe(0);
      // The victim is untouched and the token still enrolls a well-behaved agent.
      expect((await getAgent(victim.id)).body).toMatchObject({ status: 'online', certificate: null });
      const good = agent({ endpoint: transport === 'ws' ? gateway.wsUrl : gateway.httpUrl, token: issued.token });
      await good.start();
      await good.waitFor((state) => state.mtls && state.connected);
    },
  );
});

describe('cut-offs', () => {
  test('revoke-cert closes the live mTLS WebSocket with 1008; the certificate and the bound token are refused; a new token enrolls it again', async () => {
    const issued = await issueToken();
    const sim = agent({ endpoint: gateway.wsUrl, token: issued.token });
    await sim.start();
    await sim.waitFor((state) => state.mtls && state.connected);
    const serial = sim.state.certificate!.serial.toLowerCase();
    const certificate = clientCertificateOf(sim);
    const closes = closesOf(sim);

    const revoked = await t.call('POST', `/api/agents/${sim.id}/revoke-cert`, { token: admin });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ status: 'revoked', certificate: { serial, revokedAt: expect.any(String) } });
    await eventually(async () => expect(closes).toEqual([{ code: 1008, reason: 'certificate revoked' }]), 1000);
    expect(sim.state.refused).toMatchObject({ code: 1008 });
    const [row] = await certificateRows(sim.id);
    expect(row.revoked_at).not.toBeNull();
    expect((await eventsOf(sim.id)).filter((event) => event.type === 'agent.cert-revoked')).toHaveLength(1);
    // Its session ended with the revocation: said once, by the revocation (the enrolment's
    // first socket, closed before the mTLS one, said its own earlier).
    const disconnected = (await eventsOf(sim.id)).filter((event) => event.type === 'agent.disconnected');
    expect(disconnected.at(-1)?.data).toEqual({ agentId: sim.id, reason: 'revoked' });
    expect(disconnected.filter((event) => event.data.reason === 'revoked')).toHaveLength(1);

    // The certificate: refused at the handshake on both transports.
    expectRefused(await wssAttempt(gateway.wsUrl, { client: certificate }));
    expectRefused(await postHttps(gateway.httpUrl, hello(uidOf(sim.id)), { client: certificate }));
    // The token it is bound to: the upgrade passes (a bound agent exists), the agent does not.
    const ws = await wssAttempt(gateway.wsUrl, { token: issued.token });
    if (ws.kind !== 'open') throw new Error(`upgrade: ${JSON.stringify(ws)}`);
    ws.send(hello(uidOf(sim.id)));
    expect(await ws.closed).toEqual({ code: 1008, reason: 'refused: agent-revoked' });
    expect(await postHttps(gateway.httpUrl, hello(uidOf(sim.id)), { token: issued.token })).toMatchObject({
      kind: 'reply',
      status: 401,
    });
    expect((await getAgent(sim.id)).body.status).toBe('revoked');
    expect(await tokenUses(issued.id)).toBe(1);

    // Enrolment with another bootstrap token brings it back, in its group.
    const fresh = await issueToken();
    const again = agent({ endpoint: gateway.wsUrl, token: fresh.token, instanceUid: uidOf(sim.id), csr: false });
    await again.start();
    expect(again.state.connected).toBe(true);
    expect(again.state.refused).toBeUndefined();
    expect((await getAgent(sim.id)).body).toMatchObject({ status: 'online', groupId: issued.groupId });
    expect((await agentRow(sim.id)).enrolled_with_token_id).toBe(fresh.id);
    expect(await tokenUses(fresh.id)).toBe(1);
  });

  test('revoke-cert destroys the kept-alive HTTPS connection of an mTLS agent at commit', async () => {
    const issued = await issueToken();
    const sim = agent({ endpoint: gateway.httpUrl, token: issued.token, heartbeatSeconds: 60 });
    await sim.start();
    await sim.waitFor((state) => state.mtls && state.connected);
    const certificate = clientCertificateOf(sim);
    const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await postHttps(
        gateway.httpUrl,
        { instanceUid: uidOf(sim.id), sequenceNum: 100n },
        { client: certificate, agent: keepAlive },
      );
      if (first.kind !== 'reply') throw new Error(`poll: ${first.error}`);
      expect(first.status).toBe(200);
      const socketClosed = new Promise<void>((resolve) => first.socket.once('close', () => resolve()));
      expect(first.socket.destroyed).toBe(false);

      expect((await t.call('POST', `/api/agents/${sim.id}/revoke-cert`, { token: admin })).status).toBe(200);
      const deadline = sleep(1000).then(() => 'still open');
      expect(await Promise.race([socketClosed.then(() => 'closed'), deadline])).toBe('closed');
      expectRefused(
        await postHttps(
          gateway.httpUrl,
          { instanceUid: uidOf(sim.id), sequenceNum: 101n },
          { client: certificate, agent: keepAlive },
        ),
      );
    } finally {
      keepAlive.destroy();
    }
  });

  // Admission and the status write are two transactions; the status write locks the row and
  // leaves a revocation that committed in between in place (and refuses the message).
  test('a revocation that commits while an admitted mTLS message is being stored leaves the agent revoked', async () => {
    const issued = await issueToken();
    const sim = agent({ endpoint: gateway.httpUrl, token: issued.token, heartbeatSeconds: 60 });
    await sim.start();
    await sim.waitFor((state) => state.mtls && state.connected);
    const certificate = clientCertificateOf(sim);
    const uid = uidOf(sim.id);
    let poll!: Promise<HttpsResult>;
    // What POST /revoke-cert does, in a transaction held open until the agent's poll has been
    // admitted (its certificate still valid: the revocation is not committed) and waits on the row.
    await t.database.db.transaction(async (trx) => {
      expect(await revokeAgent(trx, 'default', sim.id)).toMatchObject({ kind: 'revoked', changed: true });
      await notifyAgentCutoff(trx, { action: 'revoke', agentId: sim.id });
      poll = postHttps(gateway.httpUrl, { instanceUid: uid, sequenceNum: 50n }, { client: certificate });
      await eventually(async () => expect(await lockWaiters()).toBeGreaterThanOrEqual(1), 3000);
    });
    // The cut-off drops the poll's connection at commit; the server goes on with the message.
    expectRefused(await poll);
    await eventually(async () => expect(await lockWaiters()).toBe(0), 3000);
    await sleep(200);
    expect((await getAgent(sim.id)).body.status).toBe('revoked');
    // Were it not, the token it is bound to would let it back in.
    expect(await postHttps(gateway.httpUrl, hello(uid), { token: issued.token })).toMatchObject({
      kind: 'reply',
      status: 401,
    });
  });

  test('revoking the bootstrap token closes the live token-authenticated WebSocket (1008), not the mTLS one', async () => {
    const issued = await issueToken({ maxUses: 2 });
    const tokenOnly = agent({ endpoint: gateway.wsUrl, token: issued.token, csr: false });
    const withCertificate = agent({ endpoint: gateway.wsUrl, token: issued.token });
    await Promise.all([tokenOnly.start(), withCertificate.start()]);
    await withCertificate.waitFor((state) => state.mtls && state.connected);
    expect(tokenOnly.state.connected).toBe(true);
    const tokenCloses = closesOf(tokenOnly);
    const certificateCloses = closesOf(withCertificate);

    expect((await t.call('POST', `/api/tokens/${issued.id}/revoke`, { token: operator })).status).toBe(200);
    await eventually(
      async () => expect(tokenCloses).toEqual([{ code: 1008, reason: 'bootstrap token revoked' }]),
      1000,
    );
    expect(tokenOnly.state.refused).toMatchObject({ code: 1008 });
    await sleep(300); // both would have been closed by the same notification
    expect(certificateCloses).toEqual([]);
    expect(withCertificate.state).toMatchObject({ connected: true, mtls: true });
    await eventually(async () => expect((await getAgent(tokenOnly.id)).body.status).toBe('offline'));
    expect((await getAgent(withCertificate.id)).body.status).toBe('online');
  });
});

describe('push', () => {
  test('to an agent that is offline: it gets the configuration when it comes back, reports APPLIED, the API shows it applied', async () => {
    const issued = await issueToken();
    const [published] = await publishConfiguration(t, operator, ['exporters:\n  debug: {}\n']);
    const sim = agent({ endpoint: gateway.wsUrl, token: issued.token });
    await sim.start();
    await sim.waitFor((state) => state.mtls && state.connected);
    await sim.stop();
    await eventually(async () => expect((await getAgent(sim.id)).body.status).toBe('offline'));

    expect(await push(published!, [sim.id])).toEqual({ hash: published!.contentHash, agentIds: [sim.id] });
    expect((await getAgent(sim.id)).body).toMatchObject({
      status: 'offline',
      desired: {
        configurationId: published!.configurationId,
        version: published!.version,
        hash: published!.contentHash,
      },
      applied: null,
    });

    const configs: Array<{ hash: string; status: string }> = [];
    sim.on('config', (event) => configs.push(event));
    await sim.start();
    await sim.waitFor((state) => state.appliedStatus === 'APPLIED');
    expect(sim.state).toMatchObject({ mtls: true, connected: true });
    expect(configs).toEqual([
      { hash: published!.contentHash, status: 'APPLYING', error: undefined },
      { hash: published!.contentHash, status: 'APPLIED', error: undefined },
    ]);
    await eventually(async () =>
      expect((await getAgent(sim.id)).body).toMatchObject({
        status: 'online',
        applied: {
          configurationId: published!.configurationId,
          version: published!.version,
          hash: published!.contentHash,
          status: 'APPLIED',
          error: null,
        },
      }),
    );
    expect(await configOutcomes(t.database.db, 'default', [sim.id], published!.contentHash)).toEqual([
      { agentId: sim.id, status: 'APPLIED' },
    ]);
  });

  test('configOutcomes: APPLIED, FAILED with the agent message, WAITING while applying', async () => {
    const issued = await issueToken({ maxUses: 3 });
    const [published] = await publishConfiguration(t, operator, ['processors:\n  batch: {}\n']);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const sims = await fleet({
      count: 3,
      endpoint: gateway.wsUrl,
      token: issued.token,
      agentOptions: (index) => ({
        apply: async () => {
          if (index === 1) return 'exporter otlp: connection refused';
          if (index === 2) await gate;
          return undefined;
        },
      }),
    });
    await sims.waitForAll((state) => state.mtls && state.connected);
    const ids = sims.agents.map((sim) => sim.id);

    {
      expect((await push(published!, ids)).agentIds.sort()).toEqual([...ids].sort());
      await eventually(async () => {
        const [, , applying] = await Promise.all(ids.map(getAgent));
        expect(applying!.body.applied).toMatchObject({ status: 'APPLYING', hash: published!.contentHash });
        expect(await configOutcomes(t.database.db, 'default', ids, published!.contentHash)).toEqual([
          { agentId: ids[0], status: 'APPLIED' },
          { agentId: ids[1], status: 'FAILED', error: 'exporter otlp: connection refused' },
          { agentId: ids[2], status: 'WAITING' },
        ]);
      });

      release();
      await eventually(async () =>
        expect(await configOutcomes(t.database.db, 'default', [ids[2]!], published!.contentHash)).toEqual([
          { agentId: ids[2], status: 'APPLIED' },
        ]),
      );
      // Another hash is WAITING for everyone; an unknown agent too.
      const unknown = randomUUID();
      expect(await configOutcomes(t.database.db, 'default', [ids[0]!, unknown], 'ab'.repeat(32))).toEqual([
        { agentId: ids[0], status: 'WAITING' },
        { agentId: unknown, status: 'WAITING' },
      ]);
    }
  });
});

describe('approval mode', () => {
  let approvals: TestGateway;
  beforeAll(async () => {
    approvals = await startTestGateway(t, { env: { Agents__Enrollment__Mode: 'approval' } });
  });
  afterAll(() => approvals?.close());

  test('an agent with no token is held: no configuration, no certificate; approved, it reconnects, is online and moves to mTLS', async () => {
    const held = agent({ endpoint: approvals.wsUrl });
    let replies = 0;
    held.on('message', () => replies++);
    await held.start();
    expect(held.state).toMatchObject({ connected: true, enrolled: true });
    expect(held.state.refused).toBeUndefined();
    // Its CSR was sent and answered without a certificate.
    await held.waitFor((state) => state.csrPending && replies >= 2);

    const pending = await t.call('GET', '/api/agents?status=pending-approval', { token: operator });
    expect(pending.body.items.map((item: { id: string }) => item.id)).toContain(held.id);
    expect((await getAgent(held.id)).body).toMatchObject({
      status: 'pending-approval',
      certificate: null,
      name: 'otelcol-sim',
    });
    expect((await eventsOf(held.id)).map((event) => event.type)).toEqual(['agent.pending-approval']);

    const [published] = await publishConfiguration(t, operator, ['receivers:\n  hostmetrics: {}\n']);
    expect(await push(published!, [held.id])).toEqual({ hash: published!.contentHash, agentIds: [] });
    await sleep(200);
    expect(held.state.lastConfigHash).toBeUndefined();
    expect((await getAgent(held.id)).body.desired).toBeNull();
    expect(await certificateRows(held.id)).toEqual([]);
    expect(held.state.certificate).toBeUndefined();

    const closes = closesOf(held);
    const approved = await t.call('POST', `/api/agents/${held.id}/approve`, { token: operator });
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe('enrolling');
    await eventually(async () => expect(closes[0]).toEqual({ code: 1012, reason: 'approved: reconnect' }), 1000);
    await held.waitFor((state) => state.mtls && state.connected);
    expect(held.state.refused).toBeUndefined();
    const serial = held.state.certificate!.serial.toLowerCase();
    await eventually(async () =>
      expect((await getAgent(held.id)).body).toMatchObject({
        status: 'online',
        certificate: { serial, revokedAt: null },
      }),
    );
    expect(await certificateRows(held.id)).toHaveLength(1);

    // Now that it holds a certificate, its uid alone no longer gets in.
    const impostor = await wssAttempt(approvals.wsUrl);
    if (impostor.kind !== 'open') throw new Error(`upgrade: ${JSON.stringify(impostor)}`);
    impostor.send(hello(uidOf(held.id)));
    expect(await impostor.closed).toEqual({ code: 1008, reason: 'refused: uid-bound' });
    expect(held.state).toMatchObject({ connected: true, mtls: true });
  });

  test('a rejected agent is closed with 1008 and refused afterwards on both transports', async () => {
    const held = agent({ endpoint: approvals.wsUrl, csr: false });
    await held.start();
    expect(held.state.connected).toBe(true);
    expect((await getAgent(held.id)).body.status).toBe('pending-approval');

    const rejected = await t.call('POST', `/api/agents/${held.id}/reject`, { token: operator });
    expect(rejected.status).toBe(200);
    expect(rejected.body.status).toBe('revoked');
    await held.waitFor((state) => state.refused !== undefined, 1000);
    expect(held.state.lastClose).toEqual({ code: 1008, reason: 'enrolment rejected' });

    const ws = await wssAttempt(approvals.wsUrl);
    if (ws.kind !== 'open') throw new Error(`upgrade: ${JSON.stringify(ws)}`);
    ws.send(hello(uidOf(held.id)));
    expect(await ws.closed).toEqual({ code: 1008, reason: 'refused: agent-revoked' });
    expect(await postHttps(approvals.httpUrl, hello(uidOf(held.id)))).toMatchObject({ kind: 'reply', status: 401 });
    expect((await getAgent(held.id)).body.status).toBe('revoked');
  });

  test('in token mode an agent with no token is refused at the upgrade (401), and over HTTPS (401); nothing stored', async () => {
    const sim = agent({ endpoint: gateway.wsUrl });
    await sim.start();
    expect(sim.state).toMatchObject({ enrolled: false, refused: { status: 401 }, connects: 1 });
    const uid = newInstanceUid();
    expect(await postHttps(gateway.httpUrl, hello(uid))).toMatchObject({ kind: 'reply', status: 401 });
    expect(await agentRow(sim.id)).toBeUndefined();
    expect(await agentRow(uidToUuid(uid))).toBeUndefined();
  });
});

describe('liveness', () => {
  test('a silent HTTP agent goes offline after three heartbeats; a quiet WebSocket agent answering pings stays online', async () => {
    const quick = await startTestGateway(t, { env: { Agents__HeartbeatSeconds: '1' } });
    try {
      const issued = await issueToken({ maxUses: 2 });
      // heartbeatSeconds 60 overrides the offered 1 s: after enrolling, neither agent sends anything.
      const poller = agent({ endpoint: quick.httpUrl, token: issued.token, heartbeatSeconds: 60, csr: false });
      const socket = agent({ endpoint: quick.wsUrl, token: issued.token, heartbeatSeconds: 60, csr: false });
      await Promise.all([poller.start(), socket.start()]);
      expect(poller.state.connected && socket.state.connected).toBe(true);
      const started = Date.now();

      await eventually(async () => expect((await getAgent(poller.id)).body.status).toBe('offline'), 6000);
      const silentFor = Date.now() - started;
      expect(silentFor).toBeGreaterThanOrEqual(2500);
      const disconnected = (await eventsOf(poller.id)).filter((event) => event.type === 'agent.disconnected');
      expect(disconnected).toHaveLength(1);
      expect(disconnected[0].data).toMatchObject({ agentId: poller.id, reason: expect.stringMatching(/heartbeat/) });

      const quiet = (await getAgent(socket.id)).body;
      expect(quiet.status).toBe('online');
      expect(new Date(quiet.lastSeenAt).getTime()).toBeGreaterThan(started + 1000);
      expect((await eventsOf(socket.id)).map((event) => event.type)).not.toContain('agent.disconnected');
      expect(socket.state).toMatchObject({ connected: true, errors: 0 });
      await Promise.all([poller.stop(), socket.stop()]);
    } finally {
      await quick.close();
    }
  });
});

describe('key exchange groups', () => {
  /** The group a TLS client of this Node (offering its defaults) agrees on with `listener`. */
  function agreedGroup(listener: TestGateway): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect(
        { host: '127.0.0.1', port: Number(new URL(listener.wsUrl).port), ca: caPem, servername: 'localhost' },
        () => {
          resolve((socket.getEphemeralKeyInfo() as tls.EphemeralKeyInfo | null)?.name);
          socket.destroy();
        },
      );
      socket.once('error', reject);
    });
  }

  test("Agents:Tls:Groups limits the groups the listener agrees on, and an agent enrolls and moves to mTLS over them; unset, OpenSSL's default (the post-quantum hybrid first from OpenSSL 3.5)", async () => {
    const [major, minor] = process.versions.openssl.split('.').map(Number) as [number, number];
    const hybrid = major > 3 || (major === 3 && minor >= 5);
    expect(await agreedGroup(gateway)).toBe(hybrid ? 'X25519MLKEM768' : 'X25519');

    const restricted = await startTestGateway(t, { env: { Agents__Tls__Groups: 'P-256' } });
    try {
      expect(await agreedGroup(restricted)).toBe('prime256v1');
      const issued = await issueToken();
      const sim = agent({ endpoint: restricted.wsUrl, token: issued.token, serviceName: 'p256-only' });
      await sim.start();
      await sim.waitFor((state) => state.mtls && state.connected);
      expect((await getAgent(sim.id)).body).toMatchObject({ name: 'p256-only', status: 'online' });
      await sim.stop();
    } finally {
      await restricted.close();
    }
  });
});
