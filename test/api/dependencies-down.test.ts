/**
 * With a dependency down, the api answers at once. With the Temporal server gone (its port
 * refuses connections), a request that needs it is a 503 problem saying Temporal does not
 * answer and when to retry (`Retry-After`), not a wait for the operation's own deadline;
 * nothing was sent, and what needs no workflow goes on working. With Postgres cut under a
 * running api, requests are 503 too, and served again once it is back. With no worker on its
 * task queue, an operation (an Update the workflow must take) is a 503 at once, not sent.
 * With a Temporal server that takes connections and never answers, an operation is a 503
 * saying so once a probe goes unanswered too, not at the operation's 15 s deadline.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { createApp } from '../../api/app';
import { httpServer } from '../../api/http/server';
import { PRESENCE_SETTLE_MS, WorkerPresence, workerPresent } from '../../platform/worker-presence';
import { createDb } from '../../db/connection';
import { startTestApp, testSettings, type TestApp } from '../support/app';
import { seedAgents } from '../support/agents-seed';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { testInfra } from '../support/infra-env';
import { relayTo } from '../support/relay';

let t: TestApp;
let connection: Connection;

/** A loopback port nothing listens on (taken, then let go). */
async function closedPort(): Promise<number> {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  await new Promise<void>((resolve) => taken.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
  t = await startTestApp({}, { temporal: new Client({ connection }) });
});
afterAll(async () => {
  await t?.close();
  await connection?.close().catch(() => {});
});

/**
 * A pending rollout on `app` to a new group (with `agents` seeded online), its start sent:
 * answers the start's response and a reader of the rollout's state.
 */
async function startRollout(app: TestApp, name: string, agents = 0) {
  const operator = await app.token('default.operator');
  const [v1] = await publishConfiguration(app, operator, [`${name}: 1\n`]);
  const group = await app.call('POST', '/api/groups', { token: operator, body: { name } });
  await seedAgents(app.database.db, 'default', agents, () => ({ group_id: group.body.id, status: 'online' }));
  const created = await app.call('POST', '/api/rollouts', {
    token: operator,
    body: {
      configurationId: v1!.configurationId,
      version: 1,
      target: { groupIds: [group.body.id] },
      strategy: { batchSize: 1 },
    },
  });
  expect(created.status).toBe(201);
  const started = await app.call('POST', `/api/rollouts/${created.body.id}/start`, { token: operator });
  const state = async () =>
    (await app.call('GET', `/api/rollouts/${created.body.id}`, { token: operator })).body.state as string;
  return { started, state, operator };
}

test('starting a rollout with Temporal down is a 503 with Retry-After at once; the rollout stays pending', async () => {
  const { started, state, operator } = await startRollout(t, 'temporal-down', 2);
  expect(started.status).toBe(503);
  expect(started.headers.get('content-type')).toContain('application/problem+json');
  expect(started.headers.get('retry-after')).toBe('5');
  expect(started.body.detail).toMatch(/^Temporal does not answer \(.+\); nothing was sent\. Retry shortly\.$/);
  expect(await state()).toBe('pending');
  // Reads need no workflow.
  expect((await t.call('GET', '/api/fleet/summary', { token: operator })).status).toBe(200);
}, 20_000);

test('with its database gone, the api answers 503 problems with Retry-After and /readyz names Postgres; back, it serves again', async () => {
  // An api of its own, reaching the suite's Postgres through a relay the test cuts.
  const target = new URL(t.database.url);
  const relay = await relayTo(Number(target.port));
  const url = Object.assign(new URL(t.database.url), { port: String(relay.port) }).toString();
  const db = createDb(url, 2);
  const settings = testSettings(url);
  // What the api logs of an error it did not expect, shown if a fault comes out as a 500.
  const unexpected: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void unexpected.push(line) });
  const app = await createApp({ settings, db, logger });
  const server = httpServer(app, settings.errorsBaseUrl);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const token = await t.token('default.viewer');
  const groups = () => fetch(`${base}/api/groups`, { headers: { authorization: `Bearer ${token}` } });
  try {
    expect((await groups()).status).toBe(200);
    await relay.cut();
    const refused = await groups();
    expect({ status: refused.status, unexpected }).toEqual({ status: 503, unexpected: [] });
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { detail: string }).detail).toBe('The database is unavailable; retry shortly.');
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(((await ready.json()) as { detail: string }).detail).toBe('Unreachable: postgres.');
    // Back: served again, nothing restarted.
    await relay.restore();
    await eventually(async () => expect((await groups()).status).toBe(200));
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    await db.destroy();
    await relay.close();
  }
}, 30_000);

test('with no worker serving its task queue, an operation is a 503 at once saying so; nothing was sent, and the rollout stays as it was', async () => {
  // An api on the suite's Temporal, serving a task queue no worker polls.
  const connection = await Connection.connect({ address: testInfra().temporalAddress });
  const taskQueue = `no-worker-${randomBytes(4).toString('hex')}`;
  const alone = await startTestApp({ Temporal__TaskQueue: taskQueue }, { temporal: new Client({ connection }) });
  try {
    // Postgres says no worker process runs for the queue (once it has been up long enough to know).
    // Up to PRESENCE_SETTLE_MS when the suite's Postgres has only just started.
    await eventually(
      async () => expect(await workerPresent(alone.database.db, taskQueue)).toBe(false),
      PRESENCE_SETTLE_MS + 10_000,
    );
    const { started, state } = await startRollout(alone, 'no-worker');
    expect(started.status).toBe(503);
    expect(started.headers.get('retry-after')).toBe('30');
    expect(started.body.detail).toBe(
      `No worker is running for task queue ${taskQueue}, so the rollout's workflow cannot take the operation; nothing was sent. Start a worker or read its logs, then retry.`,
    );
    expect(await state()).toBe('pending');
  } finally {
    await alone.close();
    await connection.close();
  }
}, 45_000);

test('with a Temporal server that takes connections and never answers, an operation is a 503 saying so, not a wait for its deadline', async () => {
  // What a hung server, or a host gone without a reset, looks like: connections are taken, nothing comes back.
  const held = new Set<Socket>();
  const silent = createServer((socket) => void held.add(socket.on('error', () => {})));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const connection = Connection.lazy({ address: `127.0.0.1:${(silent.address() as { port: number }).port}` });
  const hung = await startTestApp({}, { temporal: new Client({ connection }) });
  // A worker process is running (it could not poll a hung server either): the operation is sent.
  const presence = await WorkerPresence.hold(hung.database.url, hung.settings.temporal.taskQueue);
  try {
    // Creating it answers too: its workflow's start, sent once the rollout is committed, is given up on in about 2 s.
    const { started, state } = await startRollout(hung, 'temporal-hung');
    expect(started.status).toBe(503);
    expect(started.headers.get('retry-after')).toBe('5');
    expect(started.body.detail).toBe(
      'Temporal stopped answering while the operation was on its way (no answer to two probes in a row, 1 s each); it may still be applied when Temporal is back. Retry shortly: if it was applied, the retry answers 409 with the state it is in.',
    );
    expect(await state()).toBe('pending');
  } finally {
    for (const socket of held) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
    await presence.release();
    await hung.close();
    await connection.close().catch(() => {});
  }
}, 30_000);
