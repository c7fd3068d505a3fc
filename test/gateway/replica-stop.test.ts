/**
 * Stopping an api replica with agents connected: the agents are told 1001 (going away) at
 * once, while the REST API is still draining, so they reconnect to another replica instead of
 * waiting out the drain; their rows go offline with their `agent.disconnected` events, and a
 * peer that never answers the close does not hold the stop.
 */
import type { ChildProcess } from 'node:child_process';
import { issueBootstrapToken, startTestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { connectWs, description, newInstanceUid, uidToUuid } from '../../scripts/agents/opamp-client';
import { apiProcessEnv, freePort, startScript } from '../support/processes';
import { SIMULATOR_CAPABILITIES, SimulatedAgent } from '../../scripts/agents/agent';

let t: TestApp;
let operator: string;
let api: ChildProcess;
let output = '';
const agents: SimulatedAgent[] = [];

beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  if (api && api.exitCode === null) api.kill('SIGKILL');
  await t?.close();
});

function agent(options: ConstructorParameters<typeof SimulatedAgent>[0]): SimulatedAgent {
  // No reconnect within the test: the replica the agent would reconnect to is gone.
  const created = new SimulatedAgent({ csr: false, reconnectMinMs: 60_000, ...options });
  agents.push(created);
  return created;
}

/** What a user reads of an agent after the stop: its row and its last event. */
async function expectMarkedOffline(agentId: string) {
  expect(await t.database.db('agents').where({ id: agentId }).first()).toMatchObject({ status: 'offline' });
  const last = await t.database.db('events').where({ subject: agentId }).orderBy('seq', 'desc').first();
  expect(last).toMatchObject({ type: 'agent.disconnected', data: { reason: 'websocket closed (1001)' } });
}

test('SIGTERM closes agent sockets with 1001 while the API is still draining', async () => {
  const [httpPort, agentPort] = [await freePort(), await freePort()];
  api = startScript(
    'api/main.ts',
    [],
    apiProcessEnv(t.database.url, {
      Environment: 'Development',
      // The test app's key: the next test's listener reads the agents' CA this process creates.
      Secrets__EncryptionKey: t.settings.encryptionKey!.toString('base64'),
      Http__Port: String(httpPort),
      // A drain far longer than the test waits: agents must not wait for it.
      Http__ShutdownDelaySeconds: '120',
      Agents__Listen: `127.0.0.1:${agentPort}`,
      Agents__Plaintext: 'true',
    }),
  );
  api.stdout!.on('data', (d) => (output += d));
  api.stderr!.on('data', (d) => (output += d));
  await eventually(async () => expect((await fetch(`http://127.0.0.1:${httpPort}/readyz`)).status).toBe(200), 60_000);

  const issued = await issueBootstrapToken(t, operator, { maxUses: 2 });
  const sims = [0, 1].map(() => agent({ endpoint: `ws://127.0.0.1:${agentPort}/v1/opamp`, token: issued.token }));
  await Promise.all(sims.map((sim) => sim.start()));
  await Promise.all(sims.map((sim) => sim.waitFor((state) => state.connected)));

  api.kill('SIGTERM');
  await Promise.all(sims.map((sim) => sim.waitFor((state) => state.lastClose?.code === 1001)));
  // The REST API is still draining (readiness 503) when the agents have gone.
  expect((await fetch(`http://127.0.0.1:${httpPort}/readyz`)).status).toBe(503);
  // Marked offline by the replica as it closes, alongside the close frames.
  for (const sim of sims) await eventually(() => expectMarkedOffline(sim.id));
}, 120_000);

test('a peer that never answers the close does not hold the stop; every agent is told 1001 over TLS', async () => {
  const gateway = await startTestGateway(t);
  const ca = gateway.ca.certificatePem;
  const issued = await issueBootstrapToken(t, operator, { maxUses: 3 });
  const sims = [0, 1].map(() => agent({ endpoint: gateway.wsUrl, ca, token: issued.token }));
  await Promise.all(sims.map((sim) => sim.start()));
  await Promise.all(sims.map((sim) => sim.waitFor((state) => state.connected)));
  const silent = await connectWs(gateway.wsUrl, { token: issued.token, ca });
  const uid = newInstanceUid();
  await silent.exchange({
    instanceUid: uid,
    sequenceNum: 0n,
    capabilities: SIMULATOR_CAPABILITIES,
    agentDescription: description({ 'service.name': 'silent' }),
  });
  silent.socket.pause(); // it reads nothing more, so it never answers the close frame

  const started = performance.now();
  await gateway.close();
  // The closing handshake is not awaited: a stop used to give each peer a second to answer.
  expect(performance.now() - started).toBeLessThan(1000);

  silent.socket.resume();
  expect(await silent.closed).toMatchObject({ code: 1001 });
  await Promise.all(sims.map((sim) => sim.waitFor((state) => state.lastClose?.code === 1001)));
  for (const id of [...sims.map((sim) => sim.id), uidToUuid(uid)]) await expectMarkedOffline(id);
});
