/**
 * When a rollout runs, through the API with real agents: `startAt` (started now, scheduled
 * until then, pause and abort while scheduled) and `windows` (a batch starts only inside
 * one). The week-long cases run on the time-skipping server: test/workflows/rollout-decisions.unit.test.ts.
 */
import { WEEKDAYS } from '../../domain/rollout-windows';
import { rolloutWorkflowId } from '../../workflows/definitions';
import { publishConfiguration } from '../support/configurations';
import { recordHistories } from '../support/histories';
import { eventually } from '../support/eventually';
import { startRolloutEnv, waitForRollout, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(() => env?.close());

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

const eventsOf = (rolloutId: string) =>
  env.t.database.db('events').where({ subject: rolloutId }).orderBy('seq').select('type', 'data');

async function rolloutFor(content: string, count: number, extra: Record<string, unknown>) {
  const [v1] = await publishConfiguration(env.t, env.operator, [content]);
  const { groupId, fleet } = await env.fleet(count);
  const { strategy, ...rest } = extra as { strategy?: Record<string, unknown> };
  const created = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1, ...strategy },
    ...rest,
  });
  expect(created.status).toBe(201);
  return { id: created.body.id as string, created: created.body, v1: v1!, fleet };
}

test('started before its startAt, a rollout is scheduled (announced with the time) and pushes its first batch then', async () => {
  const startAt = new Date(Date.now() + 4000).toISOString();
  const { id, created, v1, fleet } = await rolloutFor('scheduled: start\n', 2, { startAt });
  expect(created).toMatchObject({ state: 'pending', startAt, nextWindowAt: null });
  const started = await call('POST', `/api/rollouts/${id}/start`);
  expect(started.status).toBe(200);
  expect(started.body).toMatchObject({ state: 'scheduled', startAt, progress: { pending: 2, succeeded: 0 } });
  const done = await waitForRollout(env, id, (body) => expect(body.state).toBe('completed'));
  await recordHistories(env.client, rolloutWorkflowId(id), 'scheduled-start');
  expect(Date.parse(done.startedAt)).toBeGreaterThanOrEqual(Date.parse(startAt));
  for (const agent of fleet.agents) expect(agent.state.lastConfigHash).toBe(v1.contentHash);
  const events = await eventsOf(id);
  expect(events.map((e: { type: string }) => e.type).filter((type: string) => type !== 'rollout.progress')).toEqual([
    'rollout.created',
    'rollout.scheduled',
    'rollout.started',
    'rollout.completed',
  ]);
  expect(events[1].data).toMatchObject({ from: 'pending', state: 'scheduled', startAt, actor: expect.any(String) });
}, 60_000);

test('a scheduled rollout can be paused, resumed (scheduled again) and aborted; it never pushes', async () => {
  const startAt = new Date(Date.now() + 3600_000).toISOString();
  const { id, fleet } = await rolloutFor('scheduled: abort\n', 1, { startAt });
  expect((await call('POST', `/api/rollouts/${id}/start`)).body.state).toBe('scheduled');
  expect((await call('POST', `/api/rollouts/${id}/pause`)).body.state).toBe('paused');
  expect((await call('POST', `/api/rollouts/${id}/resume`)).body.state).toBe('scheduled');
  const aborted = await call('POST', `/api/rollouts/${id}/abort`);
  expect(aborted.body).toMatchObject({ state: 'aborted', progress: { skipped: 1 } });
  expect(fleet.agents[0]!.state.lastConfigHash).toBeUndefined();
  expect((await eventsOf(id)).map((e: { type: string }) => e.type)).toEqual([
    'rollout.created',
    'rollout.scheduled',
    'rollout.paused',
    'rollout.resumed',
    'rollout.aborted',
  ]);
}, 60_000);

test('outside its windows a running rollout pushes nothing, says when the next window opens, and announces the wait', async () => {
  // A window two days from now (UTC), an hour long: closed now.
  const inTwoDays = new Date(Date.now() + 2 * 86_400_000);
  const day = WEEKDAYS[(inTwoDays.getUTCDay() + 6) % 7]!;
  const windows = [{ days: [day], from: '00:00', to: '01:00', timeZone: 'UTC' }];
  const { id, fleet } = await rolloutFor('windows: closed\n', 1, { strategy: { windows } });
  const started = await call('POST', `/api/rollouts/${id}/start`);
  expect(started.body.state).toBe('running');
  const opens = `${inTwoDays.toISOString().slice(0, 10)}T00:00:00.000Z`;
  expect(started.body).toMatchObject({ strategy: { windows }, nextWindowAt: opens });
  const waiting = await eventually(async () => {
    const found = (await eventsOf(id)).find((e: { type: string }) => e.type === 'rollout.waiting-for-window');
    expect(found).toBeDefined();
    return found;
  });
  expect(waiting.data).toMatchObject({ rolloutId: id, batch: 1, opensAt: opens });
  const body = (await call('GET', `/api/rollouts/${id}`)).body;
  expect(body).toMatchObject({ state: 'running', currentBatch: 0, progress: { pending: 1, applying: 0 } });
  expect(fleet.agents[0]!.state.lastConfigHash).toBeUndefined();
  expect((await call('POST', `/api/rollouts/${id}/abort`)).body.state).toBe('aborted');
}, 60_000);

test('bad schedules are refused with the field that is wrong, and nothing is created', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, ['refused: schedule\n']);
  const { groupId } = await env.fleet(1);
  const create = (extra: Record<string, unknown>, strategy: Record<string, unknown> = {}) =>
    call('POST', '/api/rollouts', {
      configurationId: v1!.configurationId,
      version: v1!.version,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 1, ...strategy },
      ...extra,
    });
  const refused = async (extra: Record<string, unknown>, strategy: Record<string, unknown>, path: string) => {
    const res = await create(extra, strategy);
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    return res.body.errors.find((e: { path: string }) => e.path === path).message as string;
  };
  expect(await refused({ startAt: '2020-01-01T00:00:00Z' }, {}, 'body.startAt')).toBe('must be in the future');
  expect(await refused({ startAt: '2099-01-01T00:00:00Z' }, {}, 'body.startAt')).toBe('must be within a year');
  await refused({ startAt: 'tomorrow' }, {}, 'body.startAt');
  await refused({ startAt: '2027-01-01T00:00:00' }, {}, 'body.startAt'); // no offset: whose time?
  const window = { days: ['mon'], from: '09:00', to: '17:00', timeZone: 'Europe/Berlin' };
  expect(
    await refused({}, { windows: [{ ...window, timeZone: 'Mars/Olympus' }] }, 'body.strategy.windows.0.timeZone'),
  ).toBe('must be an IANA time zone, e.g. Europe/Berlin or UTC');
  await refused({}, { windows: [{ ...window, from: '25:00' }] }, 'body.strategy.windows.0.from');
  await refused({}, { windows: [{ ...window, to: '09:00' }] }, 'body.strategy.windows.0.to');
  await refused({}, { windows: [{ ...window, days: ['mon', 'mon'] }] }, 'body.strategy.windows.0.days');
  await refused({}, { windows: [{ ...window, days: ['monday'] }] }, 'body.strategy.windows.0.days.0');
  await refused({}, { windows: [] }, 'body.strategy.windows');
  const list = await call('GET', `/api/rollouts?configurationId=${v1!.configurationId}`);
  expect(list.body.items).toEqual([]);
});
