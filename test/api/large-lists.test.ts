import { startTestApp, type TestApp } from '../support/app';
import { seedAgent, seedAgents } from '../support/agents-seed';
import { eventually } from '../support/eventually';

let t: TestApp;
let viewer: string;
beforeAll(async () => {
  t = await startTestApp();
  viewer = await t.token('default.viewer');
  await seedAgents(t.database.db, 'default', 10_000, (i) => ({ labels: { env: i % 2 ? 'prod' : 'dev' } }));
});
afterAll(() => t?.close());

const total = async (path: string) =>
  Number((await t.call('GET', path, { token: viewer })).headers.get('x-total-count'));

test('small counts are exact on every call', async () => {
  expect(await total('/api/agents?label=env:prod&limit=1')).toBe(5_000);
  await seedAgent(t.database.db, 'default', { labels: { env: 'prod' } });
  expect(await total('/api/agents?label=env:prod&limit=1')).toBe(5_001);
});

test('counts of 10,000 or more may lag by about 5 seconds, then are exact again', async () => {
  expect(await total('/api/agents?limit=1')).toBe(10_001);
  await seedAgent(t.database.db, 'default');
  expect(await total('/api/agents?limit=1')).toBe(10_001); // remembered
  expect(await total('/api/agents?limit=2')).toBe(10_001); // same filter, other page size: same count
  await new Promise((resolve) => setTimeout(resolve, 5_100));
  // the first call after 5 s is answered at once and recounts in the background
  await eventually(async () => expect(await total('/api/agents?limit=1')).toBe(10_002), 2_000);
}, 20_000);

test("one tenant's remembered count never answers another's", async () => {
  expect(await total('/api/agents?limit=1')).toBeGreaterThan(10_000);
  const acme = await t.call('GET', '/api/agents?limit=1', { token: await t.token('acme.viewer') });
  expect(acme.headers.get('x-total-count')).toBe('0');
});
