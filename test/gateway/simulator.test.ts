/**
 * The agent simulator against the real agent listener over plain TCP (Development): enrolment,
 * status, refusals, disconnect. CSR/mTLS and remote configuration are tested with the gateway's TLS.
 */
import { checkCsr } from '../../domain/certificates/csr';
import { x509 } from '../../domain/certificates/x509';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { pushConfiguration } from '../../domain/pushes';
import { startTestApp, type TestApp } from '../support/app';
import { publishConfiguration } from '../support/configurations';
import { runScript, startScript } from '../support/processes';
import { eventually } from '../support/eventually';
import { newInstanceUid, uidToUuid } from '../../scripts/agents/opamp-client';
import { generateCsr } from '../../scripts/agents/csr';
import { runFleet, type Fleet } from '../../scripts/agents/fleet';
import { SimulatedAgent, SIMULATOR_CAPABILITIES } from '../../scripts/agents/agent';
import type { AgentCertificate } from '../../scripts/agents/agent-state';

let t: TestApp;
let operator: string;
let gateway: TestGateway;
let wsUrl: string;
let httpUrl: string;
const fleets: Fleet[] = [];
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
  gateway = await startTestGateway(t, { plaintext: true });
  ({ wsUrl, httpUrl } = gateway);
});
afterAll(async () => {
  await Promise.all([...fleets.map((fleet) => fleet.stop()), ...agents.map((agent) => agent.stop())]);
  await gateway?.close();
  await t?.close();
});

const issueToken = (body: Record<string, unknown> = {}) => issueBootstrapToken(t, operator, body);

const getAgent = (id: string) => t.call('GET', `/api/agents/${id}`, { token: operator });

async function fleet(options: Parameters<typeof runFleet>[0]): Promise<Fleet> {
  const started = await runFleet(options);
  fleets.push(started);
  return started;
}

function agent(options: ConstructorParameters<typeof SimulatedAgent>[0]): SimulatedAgent {
  const created = new SimulatedAgent(options);
  agents.push(created);
  return created;
}

describe('agent simulator against the listener', () => {
  test.each([
    ['ws', () => wsUrl],
    ['http', () => httpUrl],
  ])(
    '5 agents over %s enroll, appear online with their service.name, and go offline when stopped',
    async (transport, url) => {
      const issued = await issueToken({ maxUses: 5 });
      const sims = await fleet({
        count: 5,
        endpoint: url(),
        token: issued.token,
        serviceName: `edge-${transport}`,
        heartbeatSeconds: 1,
      });
      await sims.waitForAll((state) => state.enrolled && state.connected);
      expect(sims.stats()).toMatchObject({ agents: 5, connected: 5, enrolled: 5, mtls: 0, refused: 0, errors: 0 });
      for (const sim of sims.agents) {
        const res = await getAgent(sim.id);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({
          id: sim.id,
          name: `edge-${transport}`,
          status: 'online',
          groupId: issued.groupId,
          capabilities: Number(SIMULATOR_CAPABILITIES),
        });
        expect(res.body.description).toMatchObject({
          'service.name': `edge-${transport}`,
          'service.instance.id': sim.id,
        });
      }
      expect((await t.database.db('bootstrap_tokens').where({ id: issued.id }).first()).uses).toBe(5);

      // Heartbeats (1 s here) keep the session in sequence: no error, no refusal.
      const seen = (await t.database.db('agents').where({ id: sims.agents[0]!.id }).first()).last_seen_at as Date;
      await eventually(async () => {
        const row = await t.database.db('agents').where({ id: sims.agents[0]!.id }).first();
        expect(row.last_seen_at.getTime()).toBeGreaterThan(seen.getTime());
      }, 3000);

      await sims.stop();
      expect(sims.stats()).toMatchObject({ connected: 0, errors: 0 });
      for (const sim of sims.agents) {
        await eventually(async () => expect((await getAgent(sim.id)).body.status).toBe('offline'));
      }
      if (transport === 'ws') expect(sims.agents[0]!.state.lastClose?.code).toBe(1000);
      const events = await t.database.db('events').where({ subject: sims.agents[0]!.id }).orderBy('seq').pluck('type');
      expect(events).toEqual(['agent.enrolled', 'agent.connected', 'agent.disconnected']);
    },
  );

  test.each([
    ['ws', () => wsUrl],
    ['http', () => httpUrl],
  ])('?token= in the URL enrolls over %s', async (_transport, url) => {
    const issued = await issueToken();
    const sim = agent({ endpoint: url(), token: issued.token, tokenInUrl: true, serviceName: 'query-token' });
    await sim.start();
    expect(sim.state).toMatchObject({ enrolled: true, connected: true, errors: 0 });
    expect((await getAgent(sim.id)).body).toMatchObject({ name: 'query-token', status: 'online' });
    await sim.stop();
  });

  test('the transport option converts the scheme: an http:// endpoint driven over WebSocket', async () => {
    const issued = await issueToken();
    const sim = agent({ endpoint: httpUrl, transport: 'ws', token: issued.token });
    await sim.start();
    expect(sim.state).toMatchObject({ transport: 'ws', enrolled: true, connected: true });
    await sim.stop();
    expect(sim.state.lastClose?.code).toBe(1000);
  });

  test.each([
    ['ws', () => wsUrl],
    ['http', () => httpUrl],
  ])('a revoked token over %s: refused with 401, no reconnect', async (_transport, url) => {
    const issued = await issueToken();
    expect((await t.call('POST', `/api/tokens/${issued.id}/revoke`, { token: operator })).status).toBe(200);
    const sim = agent({ endpoint: url(), token: issued.token, reconnectMinMs: 10, reconnectMaxMs: 20 });
    const refused = new Promise((resolve) => sim.once('refused', resolve));
    await sim.start();
    expect(await refused).toEqual({ status: 401, reason: expect.any(String) });
    expect(sim.state).toMatchObject({
      enrolled: false,
      connected: false,
      refused: { status: 401 },
      lastHttpStatus: 401,
    });
    await new Promise((resolve) => setTimeout(resolve, 200)); // ten backoffs' worth
    expect(sim.state.connects).toBe(1);
    expect((await getAgent(sim.id)).status).toBe(404);
  });

  test('a WebSocket refused after the upgrade (close 1008) is not reconnected', async () => {
    // maxUses 1 with a bound agent: the upgrade passes, a second uid is refused with 1008.
    const issued = await issueToken({ maxUses: 1 });
    const first = agent({ endpoint: wsUrl, token: issued.token });
    await first.start();
    expect(first.state.enrolled).toBe(true);
    const second = agent({ endpoint: wsUrl, token: issued.token, reconnectMinMs: 10, reconnectMaxMs: 20 });
    await second.start();
    expect(second.state).toMatchObject({ enrolled: false, refused: { code: 1008 }, lastClose: { code: 1008 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(second.state.connects).toBe(1);
    await first.stop();
  });

  test('a network failure is retried with backoff and counted as an error, not a refusal', async () => {
    const sim = agent({
      endpoint: 'ws://127.0.0.1:1/v1/opamp',
      token: 'svc-bt.x',
      reconnectMinMs: 10,
      reconnectMaxMs: 20,
    });
    await sim.start();
    await sim.waitFor((state) => state.connects >= 3, 2000);
    expect(sim.state.refused).toBeUndefined();
    expect(sim.state.errors).toBeGreaterThanOrEqual(2);
    await sim.stop();
    const connects = sim.state.connects;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sim.state.connects).toBe(connects);
  });

  test('the CSR names the agent, is EC P-256 signed with SHA-256, and passes the server-side check', async () => {
    const id = uidToUuid(newInstanceUid());
    const { csrPem, keyPem, spki } = await generateCsr(id);
    expect(csrPem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const csr = new x509.Pkcs10CertificateRequest(csrPem);
    expect(csr.subject).toBe(`CN=${id}`);
    expect(csr.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });
    expect(Buffer.from(csr.publicKey.rawData).equals(spki)).toBe(true);
    const checked = await checkCsr(Buffer.from(csrPem), id);
    expect(checked.keyType).toBe('ec');
    await expect(checkCsr(Buffer.from(csrPem), '00000000-0000-7000-8000-000000000000')).rejects.toMatchObject({
      reason: 'instance-uid-mismatch',
    });
    // The key is usable by TLS (Node parses the PKCS#8 PEM).
    const { createPrivateKey } = await import('node:crypto');
    expect(createPrivateKey(keyPem).asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
  });

  test('an admitted agent sends its CSR and keeps running (plain endpoint: no mTLS switch)', async () => {
    const issued = await issueToken({ maxUses: 2 });
    const sim = agent({ endpoint: wsUrl, token: issued.token });
    const sent = new Promise<void>((resolve) => sim.on('change', (state) => state.csrPending && resolve()));
    await sim.start();
    await sent;
    // Whether or not this server signs CSRs yet, the agent stays on its plain connection.
    expect(sim.state).toMatchObject({ connected: true, mtls: false, errors: 0, connects: 1 });
    const noCsr = agent({ endpoint: wsUrl, token: issued.token, csr: false });
    await noCsr.start();
    expect(noCsr.state).toMatchObject({ connected: true, csrPending: false });
    await Promise.all([sim.stop(), noCsr.stop()]);
  });
});

describe('scripts/agents.ts', () => {
  test('runs N agents, prints a summary, and on SIGINT disconnects them and exits 0', async () => {
    const issued = await issueToken({ maxUses: 3 });
    const child = startScript(
      'scripts/agents.ts',
      ['--count', '3', '--token', issued.token, '--endpoint', httpUrl, '--transport', 'ws', '--heartbeat', '1'],
      {},
    );
    let stdout = '';
    child.stderr!.resume();
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        stdout += chunk;
        if (/connected=3 enrolled=3 .*errors=0 \(all started\)/.test(stdout)) resolve();
      });
      void exited.then(() => reject(new Error(`exited early: ${stdout}`)));
    });
    const ids = await t.database.db('agents').where({ enrolled_with_token_id: issued.id }).pluck('id');
    expect(ids).toHaveLength(3);
    for (const id of ids) expect((await getAgent(id)).body).toMatchObject({ status: 'online', name: 'otelcol-sim' });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stdout.trim().split('\n').at(-1)).toMatch(/ agents=3 connected=0 enrolled=3 .* errors=0$/);
    for (const id of ids) await eventually(async () => expect((await getAgent(id)).body.status).toBe('offline'));
  }, 20_000);

  test('a bad argument is one line and exit 2; --help prints usage and exits 0', async () => {
    const bad = await runScript('scripts/agents.ts', ['--token', 'svc-bt.x', '--transport', 'udp'], {});
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual(['agents: --transport must be ws or http (--help for usage)']);
    const help = await runScript('scripts/agents.ts', ['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run agents/);
  });
});

describe('agent simulator against the TLS listener: CSR, then mTLS', () => {
  let tlsGateway: TestGateway;
  beforeAll(async () => {
    tlsGateway = await startTestGateway(t);
  });
  afterAll(() => tlsGateway?.close());

  test.each([
    ['ws', () => tlsGateway.wsUrl],
    ['http', () => tlsGateway.httpUrl],
  ])('over %s: enrolls with the token, gets a certificate for its CSR, reconnects with it', async (transport, url) => {
    const issued = await issueToken();
    const sim = agent({
      endpoint: url(),
      token: issued.token,
      ca: tlsGateway.ca.certificatePem,
      serviceName: `mtls-${transport}`,
    });
    const certificate = new Promise((resolve) => sim.once('certificate', resolve));
    await sim.start();
    await certificate;
    await sim.waitFor((state) => state.mtls && state.connected);
    expect(sim.state).toMatchObject({ enrolled: true, csrPending: false, errors: 0 });
    const leaf = new x509.X509Certificate(sim.state.certificate!.certPem);
    expect(leaf.subject).toBe(`CN=${sim.id}`);
    if (transport === 'ws') expect(sim.state.connects).toBe(2);
    const res = await getAgent(sim.id);
    expect(res.body).toMatchObject({ name: `mtls-${transport}`, status: 'online' });
    await sim.stop();
    await eventually(async () => expect((await getAgent(sim.id)).body.status).toBe('offline'));
  });

  test('a pushed configuration: APPLYING then APPLIED with the effective config; an apply hook failing it reports FAILED', async () => {
    const issued = await issueToken({ maxUses: 2 });
    const [published] = await publishConfiguration(t, operator, ['receivers:\n  otlp: {}\n']);
    const seen: Array<{ hash: string; status: string; error?: string }> = [];
    const received: string[] = [];
    const sims = await fleet({
      count: 2,
      endpoint: tlsGateway.wsUrl,
      token: issued.token,
      ca: tlsGateway.ca.certificatePem,
      agentOptions: (index) => ({
        apply: (_agent, config) => {
          received.push(...Object.values(config.files).map((file) => file.body));
          return index === 1 ? 'exporter otlp: connection refused' : undefined;
        },
      }),
    });
    await sims.waitForAll((state) => state.mtls && state.connected);
    sims.agents[0]!.on('config', (event) => seen.push(event));
    const ids = sims.agents.map((sim) => sim.id);
    await t.database.db.transaction((trx) =>
      pushConfiguration(trx, {
        tenantId: 'default',
        agentIds: ids,
        configurationId: published!.configurationId,
        version: published!.version,
      }),
    );
    await sims.waitForAll((state) => state.appliedStatus === 'APPLIED' || state.appliedStatus === 'FAILED');
    expect(seen.map((event) => event.status)).toEqual(['APPLYING', 'APPLIED']);
    expect(seen[0]!.hash).toBe(published!.contentHash);
    expect(received).toEqual(['receivers:\n  otlp: {}\n', 'receivers:\n  otlp: {}\n']);
    expect(sims.stats()).toMatchObject({ configsApplied: 1, configsFailed: 1 });
    await eventually(async () => {
      const [good, bad] = await Promise.all(ids.map(getAgent));
      expect(good!.body.applied).toMatchObject({ status: 'APPLIED', hash: published!.contentHash });
      expect(bad!.body.applied).toMatchObject({
        status: 'FAILED',
        hash: published!.contentHash,
        error: 'exporter otlp: connection refused',
      });
    });
    const row = await t.database.db('agents').where({ id: ids[0] }).first();
    expect(row.effective_config_hash).toBe(published!.contentHash);
  });

  test('renewal: past renewAtFraction of its lifetime the agent sends a new CSR on the live connection and keeps it', async () => {
    const renewing = await startTestGateway(t, { minReissueSeconds: 0 });
    try {
      const issued = await issueToken();
      const sim = agent({
        endpoint: renewing.wsUrl,
        token: issued.token,
        ca: renewing.ca.certificatePem,
        heartbeatSeconds: 1,
      });
      await sim.start();
      await sim.waitFor((state) => state.mtls && state.connected);
      const first = sim.state.certificate!;
      const renewed = new Promise<AgentCertificate>((resolve) => sim.once('certificate', resolve));
      sim.renewAtFraction = 0; // due now: the next reply starts renewal
      const second = await renewed;
      sim.renewAtFraction = 2 / 3;
      expect(second.serial).not.toBe(first.serial);
      expect(second.keyPem).not.toBe(first.keyPem);
      expect(sim.state.certificate).toBe(second);
      expect(sim.state).toMatchObject({ connects: 2, mtls: true, connected: true, errors: 0 });
      await sim.stop();
    } finally {
      await renewing.close();
    }
  });
});
