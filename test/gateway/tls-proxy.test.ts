/**
 * Agents' TLS ended at a real HAProxy (deploy/haproxy-agents-tls.cfg) in front of the agent
 * listener, which takes plain HTTP from that proxy alone (Agents:Tls:TerminatedBy) and each
 * request's client certificate from the X-Agent-Certificate header the proxy sets
 * (docs/deployment.md, "TLS at the load balancer"). HAProxy connects from 127.0.0.2, the one
 * trusted address; this test's own connections come from 127.0.0.1 unless they say otherwise.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { randomUUID, X509Certificate } from 'node:crypto';
import WebSocket from 'ws';
import { decodeServerToAgent, encodeAgentToServer } from '../../gateway/codec';
import { ensureHaproxy, startHaproxy, writeAgentTlsFiles } from '../../scripts/infra/haproxy';
import { SimulatedAgent } from '../../scripts/agents/agent';
import { newInstanceUid, type AgentMessage } from '../../scripts/agents/opamp-client';
import type { SimulatedAgentOptions } from '../../scripts/agents/agent-state';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { freePort } from '../support/processes';
import { foreignCertificate, type ClientCertificate } from '../support/tls';

const PROXY_ADDRESS = '127.0.0.2';

let t: TestApp;
let operator: string;
let admin: string;
let gateway: TestGateway;
let haproxy: ReturnType<typeof startHaproxy>;
let dir: string;
let caPem: string;
/** The proxy's agents port: wss:// and https:// …/v1/opamp. */
let wsUrl: string;
let httpsUrl: string;
/** The listener's own port, plain HTTP. */
let directUrl: string;
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  ensureHaproxy();
  t = await startTestApp();
  [operator, admin] = await Promise.all([t.token('default.operator'), t.token('default.admin')]);
  gateway = await startTestGateway(t, { terminatedBy: PROXY_ADDRESS });
  caPem = gateway.ca.certificatePem;
  // HAProxy's certificate, issued by the agents' CA as `fleet issue-proxy-certificate` does.
  dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-tls-proxy-'));
  const files = await writeAgentTlsFiles(gateway.ca, dir);
  const port = await freePort();
  const listener = new URL(gateway.httpUrl);
  haproxy = startHaproxy({ agents: port }, [{ http: Number(new URL(t.baseUrl).port), agents: Number(listener.port) }], {
    agentTls: { ...files, source: PROXY_ADDRESS },
  });
  wsUrl = `wss://127.0.0.1:${port}/v1/opamp`;
  httpsUrl = `https://127.0.0.1:${port}/v1/opamp`;
  directUrl = gateway.httpUrl;
  // HAProxy listens and finds the listener ready: an agent without a credential is answered 401.
  await eventually(async () => expect(await post(httpsUrl, hello())).toMatchObject({ status: 401 }), 30_000);
}, 60_000);

afterAll(async () => {
  await Promise.all(agents.map((sim) => sim.stop()));
  await haproxy?.stop();
  await gateway?.close();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function agent(options: SimulatedAgentOptions): SimulatedAgent {
  const created = new SimulatedAgent({ ca: caPem, reconnectMinMs: 50, reconnectMaxMs: 200, ...options });
  agents.push(created);
  return created;
}

const hello = (uid = newInstanceUid()): AgentMessage => ({ instanceUid: uid, sequenceNum: 0n });
const uidOf = (id: string) => new Uint8Array(Buffer.from(id.replaceAll('-', ''), 'hex'));
const base64Der = (pem: string) => new X509Certificate(pem).raw.toString('base64');

type Posted = { status: number; message?: ReturnType<typeof decodeServerToAgent> } | { error: string };

/**
 * One OpAMP-over-HTTP request: through the proxy (https, with `client`'s certificate if any)
 * or straight to the listener (http, from `localAddress`), with extra `headers`.
 */
function post(
  url: string,
  message: AgentMessage,
  options: { client?: ClientCertificate; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<Posted> {
  const body = Buffer.from(encodeAgentToServer(message));
  const headers = {
    'content-type': 'application/x-protobuf',
    'content-length': String(body.length),
    ...options.headers,
  };
  const secure = url.startsWith('https:');
  const send = secure ? https.request : http.request;
  return new Promise((resolve) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers,
        agent: false,
        timeout: 5000,
        ...(secure ? { ca: caPem, ...options.client } : { localAddress: options.localAddress }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          resolve({ status, message: status === 200 ? decodeServerToAgent(Buffer.concat(chunks)) : undefined });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (error) => resolve({ error: error.message }));
    req.end(body);
  });
}

/** An agent enrolled through the proxy and connected again with its certificate, over `transport`. */
async function enrolled(transport: 'ws' | 'http'): Promise<{ sim: SimulatedAgent; client: ClientCertificate }> {
  const issued = await issueBootstrapToken(t, operator);
  const sim = agent({ endpoint: transport === 'ws' ? wsUrl : httpsUrl, token: issued.token, heartbeatSeconds: 1 });
  await sim.start();
  await sim.waitFor((state) => state.mtls && state.connected);
  return { sim, client: { cert: sim.state.certificate!.certPem, key: sim.state.certificate!.keyPem } };
}

describe('TLS ended at HAProxy', () => {
  test('an agent enrols with its token, then is known by the certificate HAProxy forwards, over WebSocket and HTTP', async () => {
    const { sim, client } = await enrolled('ws');
    const serial = sim.state.certificate!.serial.toLowerCase();
    const shown = await t.call('GET', `/api/agents/${sim.id}`, { token: operator });
    expect(shown.body).toMatchObject({ status: 'online', certificate: { serial, revokedAt: null } });

    // Over HTTP each request is judged by its own forwarded certificate.
    const polled = await post(httpsUrl, hello(uidOf(sim.id)), { client });
    expect(polled).toMatchObject({ status: 200 });

    const http = await enrolled('http');
    expect((await t.call('GET', `/api/agents/${http.sim.id}`, { token: operator })).body).toMatchObject({
      status: 'online',
      certificate: { serial: http.sim.state.certificate!.serial.toLowerCase() },
    });
    expect(http.sim.state.errors).toBe(0);
  });

  test('revoking the certificate closes the agent’s WebSocket through the proxy; the certificate is refused after', async () => {
    const { sim, client } = await enrolled('ws');
    const closes: Array<{ code: number; reason: string }> = [];
    sim.on('closed', (close: { code: number; reason: string }) => closes.push(close));
    expect((await t.call('POST', `/api/agents/${sim.id}/revoke-cert`, { token: admin })).status).toBe(200);
    await eventually(async () => expect(closes).toContainEqual({ code: 1008, reason: 'certificate revoked' }));
    // HAProxy still completes the handshake (it knows nothing of revocations); the listener refuses.
    expect(await post(httpsUrl, hello(uidOf(sim.id)), { client })).toMatchObject({ status: 401 });
    const upgrade = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { ca: caPem, ...client });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => reject(new Error('a revoked certificate was let in')));
      ws.once('error', reject);
    });
    expect(upgrade).toBe(401);
  });

  test('a certificate header the agent sends itself is dropped by HAProxy: the agent has no credential', async () => {
    const { sim, client } = await enrolled('http');
    const forged = { 'x-agent-certificate': base64Der(client.cert) };
    expect(await post(httpsUrl, hello(uidOf(sim.id)), { headers: forged })).toMatchObject({ status: 401 });
  });

  test('a certificate of another CA fails HAProxy’s handshake', async () => {
    const foreign = await foreignCertificate(gateway.ca, randomUUID());
    expect(await post(httpsUrl, hello(), { client: foreign })).toEqual({ error: expect.any(String) });
  });
});

describe('the listener behind the proxy', () => {
  test('a connection from an address outside Agents:Tls:TerminatedBy is closed unanswered, whatever it carries', async () => {
    const { sim, client } = await enrolled('ws');
    const claimed = { 'x-agent-certificate': base64Der(client.cert) };
    expect(await post(directUrl, hello(uidOf(sim.id)), { headers: claimed })).toEqual({
      error: expect.stringMatching(/socket hang up|ECONNRESET/),
    });
  });

  test('from the proxy’s address, a forwarded certificate is checked again: another CA’s, junk, or two headers are refused', async () => {
    const { sim, client } = await enrolled('ws');
    const fromProxy = (headers: Record<string, string>) =>
      post(directUrl, hello(uidOf(sim.id)), { headers, localAddress: PROXY_ADDRESS });
    // A proxy that verified nothing cannot vouch for a certificate of its own making.
    const foreign = await foreignCertificate(gateway.ca, sim.id);
    expect(await fromProxy({ 'x-agent-certificate': base64Der(foreign.cert) })).toMatchObject({ status: 401 });
    expect(await fromProxy({ 'x-agent-certificate': 'not a certificate' })).toMatchObject({ status: 401 });
    expect(
      await fromProxy({ 'x-agent-certificate': `${base64Der(client.cert)}, ${base64Der(client.cert)}` }),
    ).toMatchObject({ status: 401 });
    // nginx's form, URL-escaped PEM, of the agent's own certificate is taken.
    expect(await fromProxy({ 'x-agent-certificate': encodeURIComponent(client.cert) })).toMatchObject({ status: 200 });
    expect(await fromProxy({ 'x-agent-certificate': base64Der(client.cert) })).toMatchObject({ status: 200 });
  });
});
