/**
 * What agents report running, kept redacted and compared with what they should run
 * (`GET /api/agents/{id}/effective-configuration`), with real agents over OpAMP: one runs
 * its desired version, one was edited on its host, one reports too much to keep.
 */
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv();
}, 60_000);
afterAll(() => env?.close());

const call = (method: string, path: string, token = env.operator) => env.t.call(method, path, { token });
const effective = (agentId: string) => call('GET', `/api/agents/${agentId}/effective-configuration`);

const NAME = 'drift-collector';
/** An agent whose effective configuration is kept (the first test's). */
let reportedId: string;
const V1 = [
  'exporters:',
  '  otlp:',
  '    endpoint: collector:4317',
  '    headers:',
  '      api-key: s3cr3t-one',
  '',
].join('\n');

test('an agent running its desired version matches it; one edited on its host differs, shown as a redacted diff', async () => {
  const [v1] = await publishConfiguration(env.t, env.operator, [V1], { name: NAME });
  const { groupId, fleet, ids } = await env.fleet(3);
  const [steady, edited, quiet] = fleet.agents as [
    (typeof fleet.agents)[0],
    (typeof fleet.agents)[0],
    (typeof fleet.agents)[0],
  ];
  // Before any configuration: nothing reported yet.
  const none = await effective(quiet.id);
  expect(none.status).toBe(404);
  expect(none.body.detail).toContain('has not reported an effective configuration yet');

  const created = await env.t.call('POST', '/api/rollouts', {
    token: env.operator,
    body: {
      configurationId: v1!.configurationId,
      version: 1,
      target: { groupIds: [groupId] },
      strategy: { batchSize: 3 },
    },
  });
  expect((await call('POST', `/api/rollouts/${created.body.id}/start`)).status).toBe(200);
  await eventually(async () =>
    expect((await call('GET', `/api/rollouts/${created.body.id}`)).body.state).toBe('completed'),
  );

  const matching = await eventually(async () => {
    const res = await effective(steady.id);
    expect(res.status).toBe(200);
    return res.body;
  });
  reportedId = steady.id;
  expect(matching).toMatchObject({
    agentId: steady.id,
    hash: v1!.contentHash,
    kept: true,
    redactedValues: 1,
    desired: { configurationId: v1!.configurationId, name: NAME, version: 1, matches: true, file: NAME, diff: '' },
  });
  expect(matching.files).toEqual([
    {
      name: NAME,
      contentType: expect.any(String),
      bytes: Buffer.byteLength(V1),
      content: V1.replace('s3cr3t-one', '<redacted>'),
    },
  ]);

  // Someone edits the configuration on a host: another endpoint, and another secret.
  edited.setEffectiveConfig({
    [NAME]: {
      body: V1.replace('collector:4317', 'elsewhere:4317').replace('s3cr3t-one', 's3cr3t-two'),
      contentType: 'text/yaml',
    },
  });
  const drifted = await eventually(async () => {
    const res = await effective(edited.id);
    expect(res.body.desired.matches).toBe(false);
    return res.body;
  });
  expect(drifted.desired.diff).toContain(`--- desired/${NAME}\tversion 1`);
  expect(drifted.desired.diff).toContain('-    endpoint: collector:4317');
  expect(drifted.desired.diff).toContain('+    endpoint: elsewhere:4317');
  // The secrets differ too, but redacted alike they are no difference, and neither shows.
  expect(drifted.desired.diff).toContain('       api-key: <redacted>'); // context, not a change
  expect(drifted.desired.diff).not.toMatch(/^[-+]\s+api-key/m);
  expect(JSON.stringify(drifted)).not.toContain('s3cr3t');
  // Nor is either stored.
  const stored = await env.t.database.db('agent_effective_configs').whereIn('agent_id', ids).select('files');
  expect(stored).toHaveLength(3);
  expect(JSON.stringify(stored)).not.toContain('s3cr3t');

  // Too much to keep: the files' names and sizes only, nothing to compare.
  quiet.setEffectiveConfig({ [NAME]: { body: `big: "${'x'.repeat(300 * 1024)}"\n`, contentType: 'text/yaml' } });
  const large = await eventually(async () => {
    const res = await effective(quiet.id);
    expect(res.body.kept).toBe(false);
    return res.body;
  });
  expect(large.files).toEqual([{ name: NAME, contentType: 'text/yaml', bytes: 300 * 1024 + 8, content: null }]);
  expect(large.desired).toMatchObject({ matches: false, file: NAME, diff: null });
}, 90_000);

test('unknown agents, bad ids and other tenants are problems, never someone else’s configuration', async () => {
  const unknown = await effective('00000000-0000-4000-8000-000000000000');
  expect(unknown.status).toBe(404);
  expect((await effective('not-an-id')).status).toBe(400);
  expect((await effective(reportedId)).status).toBe(200);
  const acme = await env.t.call('GET', `/api/agents/${reportedId}/effective-configuration`, {
    token: await env.t.token('acme.viewer'),
  });
  expect(acme.status).toBe(404);
  expect(JSON.stringify(acme.body)).not.toContain('exporters');
});
