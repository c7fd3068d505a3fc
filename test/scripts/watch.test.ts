/** `npm run watch`: what an operator runs in a terminal to follow events as they happen. */
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import { runScript, startScript } from '../support/processes';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

test('prints one line per event of the types asked for, as they arrive', async () => {
  const token = await t.pat('viewer');
  const admin = await t.pat('admin');
  const watch = startScript('scripts/watch.ts', ['--url', t.baseUrl, '--token', token, '--types', 'group.*'], {});
  let stdout = '';
  let stderr = '';
  watch.stdout!.on('data', (chunk) => (stdout += chunk));
  watch.stderr!.on('data', (chunk) => (stderr += chunk));
  try {
    await eventually(async () => expect(stderr).toContain('watching group.*'), 20_000);
    const group = await t.call('POST', '/api/groups', { token: admin, body: { name: 'watched' } });
    await t.call('POST', '/api/tokens', { token: admin, body: { name: 'not-a-group-event' } });
    await eventually(async () => expect(stdout).toMatch(new RegExp(`group\\.created +${group.body.id}  name watched`)));
    expect(stdout.trim().split('\n')).toHaveLength(1);
  } finally {
    watch.kill();
  }
}, 30_000);

test('a refused token stops it with the problem, not a retry loop', async () => {
  const res = await runScript('scripts/watch.ts', ['--url', t.baseUrl, '--token', 'svc-pat.nope'], {});
  expect(res.code).toBe(1);
  expect(res.stderr).toMatch(/^refused: 401 /m);
});
