/**
 * Stopping an api replica (api/main.ts, SIGTERM) with agents connected: the agents are told
 * 1001 (going away) at once, while the REST API is still draining, so they reconnect to
 * another replica instead of waiting out the drain.
 */
import type { ChildProcess } from 'node:child_process';
import { issueBootstrapToken } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { apiProcessEnv, freePort, startScript } from '../support/processes';
import { SimulatedAgent } from '../support/simulator';

let t: TestApp;
let api: ChildProcess;
let output = '';
const agents: SimulatedAgent[] = [];

afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop()));
  if (api && api.exitCode === null) api.kill('SIGKILL');
  await t?.close();
});

test('SIGTERM closes agent sockets with 1001 while the API is still draining', async () => {
  t = await startTestApp();
  const operator = await t.token('default.operator');
  const [httpPort, agentPort] = [await freePort(), await freePort()];
  api = startScript(
    'api/main.ts',
    [],
    apiProcessEnv(t.database.url, {
      Environment: 'Development',
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
  for (let i = 0; i < 2; i++) {
    agents.push(
      new SimulatedAgent({
        endpoint: `ws://127.0.0.1:${agentPort}/v1/opamp`,
        token: issued.token,
        csr: false,
        reconnectMinMs: 60_000,
      }),
    );
  }
  await Promise.all(agents.map((agent) => agent.start()));
  await Promise.all(agents.map((agent) => agent.waitFor((state) => state.connected)));

  api.kill('SIGTERM');
  await Promise.all(agents.map((agent) => agent.waitFor((state) => state.lastClose?.code === 1001)));
  // The REST API is still draining (readiness 503) when the agents have gone.
  expect((await fetch(`http://127.0.0.1:${httpPort}/readyz`)).status).toBe(503);
  // Marked offline by the replica as it closes, alongside the close handshake.
  for (const agent of agents) {
    await eventually(async () =>
      expect(await t.database.db('agents').where({ id: agent.id }).first()).toMatchObject({ status: 'offline' }),
    );
  }
}, 120_000);
