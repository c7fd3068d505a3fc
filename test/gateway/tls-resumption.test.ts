/**
 * TLS session resumption on the agent port (gateway/session-tickets.ts), over real sockets:
 * a resumed session is still the agent its certificate names, on this replica and on another
 * of the same installation; a resumed session never lets in what a full handshake refuses (a
 * revoked certificate, another CA's, one expired since, another agent's uid).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import WebSocket from 'ws';
import { decodeServerToAgent, encodeAgentToServer, frameWebSocket, unframeWebSocket } from '../../gateway/codec';
import { SESSION_ID_CONTEXT, ticketKeys, ticketPeriod } from '../../gateway/session-tickets';
import { checkCsr, issueLeafCertificate, issueServerCertificate } from '../../domain/certificates';
import { generateCsr } from '../../scripts/agents/csr';
import { SimulatedAgent } from '../../scripts/agents/agent';
import { description, newInstanceUid, type AgentMessage } from '../../scripts/agents/opamp-client';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { foreignCertificate, type ClientCertificate } from '../support/tls';

let t: TestApp;
let operator: string;
let admin: string;
let gateway: TestGateway;
/** Another replica of the same installation: same database, same encryption key, its own server certificate. */
let replica: TestGateway;
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  t = await startTestApp();
  [operator, admin] = await Promise.all([t.token('default.operator'), t.token('default.admin')]);
  [gateway, replica] = await Promise.all([startTestGateway(t), startTestGateway(t)]);
});
afterAll(async () => {
  await Promise.all(agents.map((sim) => sim.stop()));
  await Promise.all([gateway?.close(), replica?.close()]);
  await t?.close();
});

/** Each TLS connection a gateway completed: resumed or not, and the client certificate it holds. */
function handshakesOf(gw: TestGateway): Array<{ resumed: boolean; serial?: string }> {
  const seen: Array<{ resumed: boolean; serial?: string }> = [];
  gw.listener.server.prependListener('secureConnection', (socket: TLSSocket) => {
    const serial = socket.getPeerCertificate()?.serialNumber?.toLowerCase();
    seen.push({
      resumed: socket.isSessionReused(),
      serial: serial?.padStart(serial.length + (serial.length % 2), '0'),
    });
  });
  return seen;
}

/** An agent enrolled and connected over mTLS (its certificate and serial). */
async function mtlsAgent(): Promise<{ sim: SimulatedAgent; client: ClientCertificate; serial: string }> {
  const issued = await issueBootstrapToken(t, operator);
  const sim = new SimulatedAgent({
    endpoint: gateway.wsUrl,
    token: issued.token,
    ca: gateway.ca.certificatePem,
    reconnectMinMs: 50,
    reconnectMaxMs: 200,
  });
  agents.push(sim);
  await sim.start();
  await sim.waitFor((state) => state.mtls && state.connected);
  const certificate = sim.state.certificate!;
  return { sim, client: { cert: certificate.certPem, key: certificate.keyPem }, serial: certificate.serial };
}

/** What one WebSocket attempt with a client certificate (and a session to resume) came to. */
type Attempt =
  | { kind: 'dropped'; error: string; session?: Buffer; resumed: boolean }
  | { kind: 'closed'; code: number; reason: string; replies: number; session?: Buffer; resumed: boolean }
  | { kind: 'replied'; session?: Buffer; resumed: boolean };

/**
 * Connects with `client` (offering `session`), sends a first message for `uid` and waits for
 * its reply, the close, or the drop; keeps the session the server sent, if any.
 */
function attempt(url: string, client: ClientCertificate, uid: Uint8Array, session?: Buffer): Promise<Attempt> {
  let kept: Buffer | undefined;
  /** Whether the handshake resumed the session (read at the handshake: a closed socket cannot tell). */
  let resumedAt = false;
  const ws = new WebSocket(url, {
    ca: gateway.ca.certificatePem,
    ...client,
    session,
    handshakeTimeout: 5000,
    perMessageDeflate: false,
    createConnection: ((options: tls.ConnectionOptions) => {
      const connecting = tls.connect({ ...options, path: undefined, servername: '' });
      connecting.on('secureConnect', () => (resumedAt = connecting.isSessionReused()));
      connecting.on('session', (received: Buffer) => (kept = received));
      return connecting;
    }) as unknown as WebSocket.ClientOptions['createConnection'],
  } as WebSocket.ClientOptions);
  const resumed = () => resumedAt;
  let replies = 0;
  return new Promise((resolve) => {
    ws.on('error', (error) => resolve({ kind: 'dropped', error: error.message, session: kept, resumed: resumed() }));
    ws.on('open', () => {
      const hello: AgentMessage = {
        instanceUid: uid,
        sequenceNum: 0n,
        agentDescription: description({ 'service.name': 'resumption' }),
      };
      ws.send(frameWebSocket(encodeAgentToServer(hello)));
    });
    ws.on('message', (data) => {
      decodeServerToAgent(unframeWebSocket(data as Buffer));
      replies++;
      // The reply came: the session is admitted. Give the tickets a moment, then leave.
      setTimeout(() => ws.close(1000), 50);
    });
    ws.on('close', (code, reason) =>
      resolve(
        replies > 0 && code === 1000
          ? { kind: 'replied', session: kept, resumed: resumed() }
          : { kind: 'closed', code, reason: reason.toString(), replies, session: kept, resumed: resumed() },
      ),
    );
  });
}

const uidOf = (id: string) => new Uint8Array(Buffer.from(id.replaceAll('-', ''), 'hex'));

test('ticket keys: the same on every replica of an installation, new each period, none shared between installations', () => {
  const key = Buffer.alloc(32, 1);
  const period = ticketPeriod(Date.now());
  expect(ticketKeys(key, period)).toHaveLength(48);
  expect(ticketKeys(key, period).equals(ticketKeys(Buffer.from(key), period))).toBe(true);
  expect(ticketKeys(key, period).equals(ticketKeys(key, period + 1))).toBe(false);
  expect(ticketKeys(key, period).equals(ticketKeys(Buffer.alloc(32, 2), period))).toBe(false);
  // Both listeners run on the current period's keys, derived from the one encryption key.
  const current = ticketKeys(gateway.settings.encryptionKey!, ticketPeriod(Date.now()));
  for (const gw of [gateway, replica])
    expect((gw.listener.server as unknown as tls.Server).getTicketKeys().equals(current)).toBe(true);
});

test('the simulator resumes its session when it reconnects, and the resumed session is still its certificate: admitted, online', async () => {
  const { sim, serial } = await mtlsAgent();
  const handshakes = handshakesOf(gateway);
  await sim.stop();
  await sim.start();
  await sim.waitFor((state) => state.mtls && state.connected);
  expect(handshakes).toEqual([{ resumed: true, serial }]);
  const res = await t.call('GET', `/api/agents/${sim.id}`, { token: operator });
  expect(res.body).toMatchObject({ status: 'online', certificate: { serial, revokedAt: null } });
});

test("a session begun on one replica resumes on another; there it is the certificate's agent, and only that agent", async () => {
  const { sim, client, serial } = await mtlsAgent();
  await sim.stop();
  const first = await attempt(gateway.wsUrl, client, uidOf(sim.id));
  expect(first).toMatchObject({ kind: 'replied', resumed: false, session: expect.any(Buffer) });

  const handshakes = handshakesOf(replica);
  const resumed = await attempt(replica.wsUrl, client, uidOf(sim.id), first.session);
  expect(resumed).toMatchObject({ kind: 'replied', resumed: true });
  // The same session claiming another agent's uid is refused as a full handshake would be.
  const other = await attempt(replica.wsUrl, client, newInstanceUid(), first.session);
  expect(other).toMatchObject({ kind: 'closed', code: 1008, reason: 'refused: certificate-mismatch', resumed: true });
  expect(handshakes).toEqual([
    { resumed: true, serial },
    { resumed: true, serial },
  ]);
});

test('a revoked certificate is refused on a resumed session, on every replica', async () => {
  const { sim, client } = await mtlsAgent();
  await sim.stop();
  const first = await attempt(gateway.wsUrl, client, uidOf(sim.id));
  expect(first).toMatchObject({ kind: 'replied', session: expect.any(Buffer) });
  const revoked = await t.call('POST', `/api/agents/${sim.id}/revoke-cert`, { token: admin });
  expect(revoked.status).toBe(200);

  const handshakes = [handshakesOf(gateway), handshakesOf(replica)];
  for (const gw of [gateway, replica]) {
    const again = await attempt(gw.wsUrl, client, uidOf(sim.id), first.session);
    expect(again).toMatchObject({ kind: 'dropped', resumed: true });
  }
  expect(handshakes.flat().map((handshake) => handshake.resumed)).toEqual([true, true]);
});

/**
 * A ticket for `client` from a TLS server that shares the installation's ticket keys but keeps
 * whatever connection it gets (the gateway drops a foreign certificate before any ticket
 * leaves, with the first write): the worst case, a session carrying a certificate no replica
 * would accept.
 */
async function ticketFromTwin(client: ClientCertificate): Promise<Buffer> {
  const certificate = await issueServerCertificate(gateway.ca, ['127.0.0.1']);
  const twin = tls.createServer({
    cert: certificate.certificatePem,
    key: certificate.keyPem,
    ca: gateway.ca.certificatePem,
    requestCert: true,
    rejectUnauthorized: false,
    sessionIdContext: SESSION_ID_CONTEXT,
    ticketKeys: ticketKeys(gateway.settings.encryptionKey!, ticketPeriod(Date.now())),
  });
  // OpenSSL sends a TLS 1.3 server's tickets with its first write.
  twin.on('secureConnection', (socket) => socket.end('hello'));
  await new Promise<void>((resolve) => twin.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = twin.address() as AddressInfo;
    return await new Promise<Buffer>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: '', ca: gateway.ca.certificatePem, ...client });
      socket.on('session', (session: Buffer) => (resolve(session), socket.destroy()));
      socket.on('error', reject);
      socket.on('close', () => reject(new Error('no ticket')));
    });
  } finally {
    twin.close();
  }
}

test("another CA's certificate is dropped at the handshake, and a session carrying one is dropped on resumption", async () => {
  const id = randomUUID();
  const forged = await foreignCertificate(gateway.ca, id);
  const handshakes = handshakesOf(gateway);
  expect(await attempt(gateway.wsUrl, forged, uidOf(id))).toMatchObject({ kind: 'dropped', resumed: false });
  const session = await ticketFromTwin(forged);
  expect(await attempt(gateway.wsUrl, forged, uidOf(id), session)).toMatchObject({ kind: 'dropped', resumed: true });
  expect(handshakes).toEqual([
    { resumed: false, serial: '7f0102030405060708090a0b0c0d0e0f' },
    { resumed: true, serial: '7f0102030405060708090a0b0c0d0e0f' },
  ]);
  expect(await t.database.db('agents').where({ id }).first()).toBeUndefined();
});

test('a certificate that has expired since its session began is refused on resumption', async () => {
  const agentId = randomUUID();
  const { csrPem, keyPem } = await generateCsr(agentId);
  const leaf = await issueLeafCertificate(t.database.db, gateway.ca, {
    tenantId: 'default',
    agentId,
    csr: await checkCsr(csrPem, agentId),
    ttlHours: 2 / 3600,
  });
  const client = { cert: leaf.certificatePem, key: keyPem };
  const session = await ticketFromTwin(client);
  await new Promise((resolve) => setTimeout(resolve, leaf.notAfter.getTime() + 1100 - Date.now()));

  const handshakes = handshakesOf(gateway);
  expect(await attempt(gateway.wsUrl, client, uidOf(agentId), session)).toMatchObject({
    kind: 'dropped',
    resumed: true,
  });
  expect(handshakes).toEqual([{ resumed: true, serial: leaf.serial }]);
});
