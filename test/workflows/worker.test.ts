import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ensureTenant } from '../../db/repos/tenants';
import { startWorker } from '../../worker/run';
import { fleetCensusWorkflowId, outboxRetentionWorkflowId, peerHealthWorkflowId } from '../../workflows/definitions';
import { testSettings } from '../support/app';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from '../support/eventually';
import { testInfra } from '../support/infra-env';
import { startScript } from '../support/processes';

let database: TestDatabase;
let connection: Connection;
let client: Client;
beforeAll(async () => {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  database = await createTestDatabase();
  connection = await Connection.connect({ address: testInfra().temporalAddress });
  client = new Client({ connection });
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

/** Ends the singletons a worker starts (retention, peer health, census), so none outlives its test. */
async function terminateSingletons(taskQueue: string) {
  for (const id of [outboxRetentionWorkflowId, peerHealthWorkflowId, fleetCensusWorkflowId].map((of) =>
    of(taskQueue),
  )) {
    await client.workflow
      .getHandle(id)
      .terminate('test done')
      .catch(() => {});
  }
}

test('the worker registers the workflows, starts the outbox retention (which prunes old events), the peer health check and the fleet census', async () => {
  const db = database.db;
  const old = new Date(Date.now() - 30 * 86_400_000);
  await db('events').insert([
    { tenant_id: 'default', type: 'test.old', source: '/test', time: old, data: '{}' },
    { tenant_id: 'default', type: 'test.recent', source: '/test', data: '{}' },
  ]);
  // Agents' history past Agents:HistoryRetentionDays goes too, the rest stays.
  const entry = (at: Date, kind: string) => ({ tenant_id: 'default', agent_id: randomUUID(), at, kind });
  await db('agent_history').insert([
    entry(new Date(Date.now() - 400 * 86_400_000), 'applied'),
    entry(new Date(), 'pushed'),
  ]);
  // The census counts every tenant's agents into this minute and deletes counts past 7 days.
  await ensureTenant(db, 'default');
  await db('fleet_minutes').insert({
    tenant_id: 'default',
    minute: new Date(Date.now() - 8 * 86_400_000),
    online: 1,
    unhealthy: 0,
    enrolled: 1,
  });
  const taskQueue = `test-${randomBytes(4).toString('hex')}`;
  const settings = testSettings(database.url, {
    Temporal__TaskQueue: taskQueue,
    Events__RetentionDays: '7',
    Agents__HistoryRetentionDays: '365',
  });
  const handle = await startWorker(settings, db);
  try {
    await eventually(async () => {
      const types = (await db('events').select('type')).map((r) => r.type);
      expect(types).toEqual(['test.recent']);
      expect(await db('agent_history').pluck('kind')).toEqual(['pushed']);
      const counts = await db('fleet_minutes').where({ tenant_id: 'default' });
      expect(counts).toEqual([expect.objectContaining({ online: 0, unhealthy: 0, enrolled: 0 })]);
      expect(Date.now() - counts[0].minute.getTime()).toBeLessThan(5 * 60_000);
    }, 20_000);
    const description = await client.workflow.getHandle(outboxRetentionWorkflowId(taskQueue)).describe();
    expect(description.type).toBe('outboxRetentionWorkflow');
    expect(description.status.name).toBe('RUNNING');
    const peerHealth = await client.workflow.getHandle(peerHealthWorkflowId(taskQueue)).describe();
    expect(peerHealth.type).toBe('peerHealthWorkflow');
    expect(peerHealth.status.name).toBe('RUNNING');
    const census = await client.workflow.getHandle(fleetCensusWorkflowId(taskQueue)).describe();
    expect(census.type).toBe('fleetCensusWorkflow');
    expect(census.status.name).toBe('RUNNING');
  } finally {
    await terminateSingletons(taskQueue);
    handle.worker.shutdown();
    await handle.running;
    await handle.connection.close();
  }
});

test('the worker process connects, runs, and stops cleanly on SIGTERM', async () => {
  const taskQueue = `proc-${randomBytes(4).toString('hex')}`;
  const worker = startScript('worker/main.ts', [], {
    Environment: 'Production',
    Database__Url: database.url,
    Temporal__Address: testInfra().temporalAddress,
    Temporal__TaskQueue: taskQueue,
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
  });
  let output = '';
  worker.stdout!.on('data', (d) => (output += d));
  worker.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => worker.on('exit', resolve));
  try {
    await eventually(async () => expect(output).toContain('worker running'), 60_000);
    worker.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('worker stopped');
  } finally {
    if (worker.exitCode === null) worker.kill('SIGKILL');
    await terminateSingletons(taskQueue);
  }
}, 90_000);
