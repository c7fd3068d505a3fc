/**
 * The fleet at a glance (`GET /api/fleet/summary`, `/api/fleet/online`): every count matches
 * the agents list filtered the way the console's link for it filters, and the census reads
 * back in intervals.
 */
import { startTestApp, type TestApp } from '../support/app';
import { seedAgents } from '../support/agents-seed';
import { publishConfiguration } from '../support/configurations';

let t: TestApp;
let viewer: string;
beforeAll(async () => {
  t = await startTestApp();
  viewer = await t.token('default.viewer');
});
afterAll(() => t?.close());

const get = (path: string, token = viewer) => t.call('GET', path, { token });
const listed = async (query: string) =>
  ((await get(`/api/agents?${query}&limit=1000`)).body.items as Array<{ id: string }>).map((agent) => agent.id).sort();

test('the summary counts agents by status, health, configuration and version, and each count is a filter of the list', async () => {
  const operator = await t.token('default.operator');
  const [v1, v2] = await publishConfiguration(t, operator, ['a: 1\n', 'a: 2\n'], { name: 'glance-main' });
  const [other] = await publishConfiguration(t, operator, ['b: 1\n'], { name: 'glance-other' });
  const db = t.database.db;
  const status = ['online', 'online', 'online', 'online', 'online', 'offline', 'offline', 'pending-approval'];
  const ids = await seedAgents(db, 'default', status.length, (i) => ({ status: status[i] as 'online' }));
  const set = (id: string, fields: Record<string, unknown>) => db('agents').where({ id }).update(fields);
  const healthy = JSON.stringify({ healthy: true, status: 'StatusOK' });
  const unhealthy = JSON.stringify({ healthy: false, lastError: 'exporter down' });
  const desire = (version: { configurationId: string; version: number; contentHash: string }) => ({
    desired_configuration_id: version.configurationId,
    desired_version: version.version,
    desired_hash: version.contentHash,
  });
  const reported = (version: { contentHash: string }, applied: 'APPLIED' | 'FAILED') => ({
    applied_hash: version.contentHash,
    applied_status: applied,
    ...(applied === 'FAILED' && { applied_error: 'bad exporter' }),
  });
  // Online: three healthy, one unhealthy, one that never reported health.
  await set(ids[0]!, { health: healthy, ...desire(v2!), ...reported(v2!, 'APPLIED') });
  await set(ids[1]!, { health: healthy, ...desire(v2!), ...reported(v2!, 'APPLIED') });
  await set(ids[2]!, { health: healthy, ...desire(v2!), ...reported(v2!, 'FAILED') });
  await set(ids[3]!, { health: unhealthy, unhealthy_since: new Date(), ...desire(v1!), ...reported(v1!, 'APPLIED') });
  await set(ids[4]!, { ...desire(v1!) });
  await set(ids[5]!, { ...desire(other!) });

  const summary = await get('/api/fleet/summary');
  expect(summary.status).toBe(200);
  expect(summary.body.agents).toEqual({
    total: 8,
    byStatus: { online: 5, offline: 2, 'pending-approval': 1, enrolling: 0, revoked: 0, 'handed-over': 0 },
    health: { healthy: 3, unhealthy: 1, unknown: 1 },
    failedApplies: 1,
    withoutConfiguration: 2,
  });
  expect(summary.body.configurations).toEqual([
    {
      configurationId: v1!.configurationId,
      name: 'glance-main',
      publishedVersion: 2,
      agents: 5,
      versions: [
        { version: 2, agents: 3, applied: 2, failed: 1 },
        { version: 1, agents: 2, applied: 1, failed: 0 },
      ],
    },
    {
      configurationId: other!.configurationId,
      name: 'glance-other',
      publishedVersion: 1,
      agents: 1,
      versions: [{ version: 1, agents: 1, applied: 0, failed: 0 }],
    },
  ]);
  expect(summary.body.otherConfigurations).toEqual({ configurations: 0, agents: 0 });
  expect(summary.body.rollouts).toEqual([]);

  // The console links each count to the list filtered so: the list holds exactly those agents.
  expect(await listed('status=online&health=unhealthy')).toEqual([ids[3]]);
  expect(await listed('status=online&health=healthy')).toEqual([ids[0], ids[1], ids[2]].sort());
  expect(await listed('status=online&health=unknown')).toEqual([ids[4]]);
  expect(await listed('applied=FAILED')).toEqual([ids[2]]);
  expect(await listed(`configurationId=${v1!.configurationId}&version=1`)).toEqual([ids[3], ids[4]].sort());

  // Another tenant's agents are never counted.
  const acme = await get('/api/fleet/summary', await t.token('acme.viewer'));
  expect(acme.body.agents.total).toBe(0);
  expect(acme.body.configurations).toEqual([]);
});

test('agents online over time come from the census, in intervals; a minute nobody counted is absent', async () => {
  const db = t.database.db;
  const minute = (ago: number) => {
    const at = new Date(Date.now() - ago * 60_000);
    at.setUTCSeconds(0, 0);
    return at;
  };
  // An hour-aligned window, so the two intervals are the same whenever the test runs.
  const start = new Date(Math.floor((Date.now() - 3 * 3_600_000) / 3_600_000) * 3_600_000);
  const at = (minutes: number) => new Date(start.getTime() + minutes * 60_000);
  await db('fleet_minutes').insert([
    { tenant_id: 'default', minute: at(0), online: 10, unhealthy: 0, enrolled: 12 },
    { tenant_id: 'default', minute: at(1), online: 7, unhealthy: 2, enrolled: 12 },
    { tenant_id: 'default', minute: at(2), online: 9, unhealthy: 1, enrolled: 13 },
    // 3–59 not counted (no worker); then one count in the next hour.
    { tenant_id: 'default', minute: at(60), online: 11, unhealthy: 0, enrolled: 13 },
    { tenant_id: 'default', minute: minute(60 * 24 * 3), online: 99, unhealthy: 0, enrolled: 99 },
  ]);
  const online = await get('/api/fleet/online?hours=4&stepMinutes=60');
  expect(online.status).toBe(200);
  expect(online.body.stepMinutes).toBe(60);
  expect(online.body.intervals).toEqual([
    { at: at(0).toISOString(), onlineMin: 7, onlineMax: 10, unhealthyMax: 2, enrolled: 13 },
    { at: at(60).toISOString(), onlineMin: 11, onlineMax: 11, unhealthyMax: 0, enrolled: 13 },
  ]);
  // The default window is the last 24 hours: the count of three days ago is out of it.
  const day = await get('/api/fleet/online');
  expect(day.body.intervals.some((one: { onlineMax: number }) => one.onlineMax === 99)).toBe(false);
  expect((await get('/api/fleet/online', await t.token('acme.viewer'))).body.intervals).toEqual([]);
});

test('bad windows and filters are refused with a problem naming the parameter', async () => {
  for (const query of ['hours=0', 'hours=169', 'hours=1.5', 'stepMinutes=0', 'stepMinutes=61', 'since=1']) {
    const res = await get(`/api/fleet/online?${query}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  }
  for (const query of ['health=sick', 'applied=applied']) {
    const res = await get(`/api/agents?${query}`);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toContain(query.split('=')[0]);
  }
});
