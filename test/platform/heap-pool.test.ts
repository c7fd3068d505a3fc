import { runScript } from '../support/processes';

// From V8 13 (Node 24, the image's) the heap pages of a peak stayed resident for the life of
// a busy process; platform/heap-pool.ts gives them back once the heap has fallen.
test("after a peak of the heap, a busy process's RSS comes back down, and the release is logged", async () => {
  const { code, stdout, stderr } = await runScript('test/platform/fixtures/heap-peak.ts', [], {
    NODE_OPTIONS: '--expose-gc',
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const peak = Number(stdout.match(/^peak (\d+)$/m)?.[1]);
  const after = Number(stdout.match(/^after (\d+)$/m)?.[1]);
  expect(peak).toBeGreaterThan(250);
  expect(after).toBeLessThan(peak / 2);
  const released = stdout.split('\n').find((line) => line.includes('released'));
  expect(JSON.parse(released!)).toMatchObject({
    msg: "released V8's pooled heap pages after a peak",
    rssBeforeMiB: expect.any(Number),
    rssAfterMiB: expect.any(Number),
    ms: expect.any(Number),
  });
}, 120_000);

test('a fall within a minute of the last release is released once the minute is over, though the heap grew back meanwhile', async () => {
  const { code, stdout, stderr } = await runScript('test/platform/fixtures/heap-peaks-twice.ts', [], {
    NODE_OPTIONS: '--expose-gc',
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  expect(stdout.split('\n').filter((line) => line.includes('"msg"'))).toHaveLength(2);
  expect(stdout).toContain('second release\n');
}, 120_000);
