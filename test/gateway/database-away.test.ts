/**
 * The database goes away under a running gateway (a restart, a failover): a connected agent
 * keeps its socket. A message that cannot be recorded is answered ServerErrorResponse
 * UNAVAILABLE with retry_info, the agent sends again when told, and once the database is back
 * what it reported is recorded, with no reconnect. Real listener, real Postgres, a real
 * WebSocket agent. The relay the test cuts carries the gateway's pool only: its LISTEN
 * connection, which has a resync of its own when it is cut, stays up, so what brings the
 * report back is the agent's retry alone.
 */
import { createDb } from '../../db/connection';
import { SimulatedAgent } from '../../scripts/agents/agent';
import { issueBootstrapToken, startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { relayTo } from '../support/relay';

let t: TestApp;
let relay: Awaited<ReturnType<typeof relayTo>>;
let gatewayDb: ReturnType<typeof createDb>;
let gateway: TestGateway;
let sim: SimulatedAgent | undefined;

beforeAll(async () => {
  t = await startTestApp();
  relay = await relayTo(Number(new URL(t.database.url).port));
  gatewayDb = createDb(Object.assign(new URL(t.database.url), { port: String(relay.port) }).toString(), 4);
  gateway = await startTestGateway(t, { plaintext: true, database: { db: gatewayDb, url: t.database.url } });
});
afterAll(async () => {
  await sim?.stop();
  await gateway?.close();
  await gatewayDb?.destroy();
  await relay?.close();
  await t?.close();
});

test('with the database away, a connected agent keeps its socket, is told to retry, and what it reported is recorded once the database is back', async () => {
  const operator = await t.token('default.operator');
  const issued = await issueBootstrapToken(t, operator);
  sim = new SimulatedAgent({ endpoint: gateway.wsUrl, token: issued.token, serviceName: 'database-away', csr: false });
  let connections = 0;
  sim.on('connected', () => connections++);
  await sim.start();
  const row = () => t.database.db('agents').where({ id: sim!.id }).first('status', 'unhealthy_since');
  await eventually(async () => expect(await row()).toMatchObject({ status: 'online', unhealthy_since: null }));

  await relay.cut();
  sim.setHealth({ healthy: false, component: 'exporter', message: 'backend unreachable' });
  const told = await sim.waitFor((state) => state.errors > 0, 15_000);
  expect(told.lastError).toBe('server error response: the server cannot reach its database; retry shortly');
  expect(told.connected).toBe(true);

  await relay.restore();
  // Sent again after the 5 s the server asked for, as full state: recorded, on the same socket.
  await eventually(async () => expect((await row())!.unhealthy_since).not.toBeNull(), 30_000);
  expect(await row()).toMatchObject({ status: 'online' });
  expect({ connections, connected: sim.state.connected }).toEqual({ connections: 1, connected: true });
}, 60_000);
