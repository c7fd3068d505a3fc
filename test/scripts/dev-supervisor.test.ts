import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { formatLogLine } from '../../scripts/dev/pretty-log';
import { restartDelayMs } from '../../scripts/dev/supervisor';
import { eventually } from '../support/eventually';
import { freePort, isRunning, startScript } from '../support/processes';

// npm run dev's supervisor (scripts/dev/supervisor.ts) over real child processes:
// fixtures/dev-stack.ts runs it as dev.ts does, over small stand-ins for api and worker.

interface Stack {
  child: ChildProcess;
  port: number;
  output: () => string;
  exited: Promise<number | null>;
  /** The pid from the latest `[dev] <name> started|restarted (pid N)` line. */
  pid: (name: string) => number | undefined;
}

async function startStack(args: string[] = []): Promise<Stack> {
  const port = await freePort();
  const child = startScript('test/scripts/fixtures/dev-stack.ts', [String(port), ...args], {});
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const pid = (name: string) => {
    const matches = [...output.matchAll(new RegExp(`\\[dev\\] ${name} (?:re)?started \\(pid (\\d+)\\)`, 'g'))];
    const last = matches.at(-1);
    return last ? Number(last[1]) : undefined;
  };
  return { child, port, output: () => output, exited, pid };
}

async function apiPid(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return ((await res.json()) as { pid: number }).pid;
}

let stack: Stack | undefined;
afterEach(() => {
  if (stack && stack.child.exitCode === null) stack.child.kill('SIGKILL');
  for (const name of ['api', 'worker', 'crashing', 'lingering']) {
    const pid = stack?.pid(name);
    if (pid && isRunning(pid)) process.kill(-pid, 'SIGKILL');
  }
  stack = undefined;
});

test('a worker killed with SIGKILL is restarted with one clear line while the api keeps answering; SIGTERM stops all, children first', async () => {
  stack = await startStack();
  const s = stack;
  const api = await eventually(() => apiPid(s.port), 15_000);
  const worker = await eventually(async () => s.pid('worker') ?? Promise.reject(new Error(s.output())), 15_000);
  await eventually(async () => expect(s.output()).toContain('worker running'), 10_000);

  process.kill(worker, 'SIGKILL');
  await eventually(async () => expect(s.pid('worker')).not.toBe(worker), 10_000);
  expect(s.output()).toContain('[dev] worker exited unexpectedly (killed by SIGKILL); restarting in 0.2 s\n');
  expect(s.output()).toMatch(/\[dev\] worker restarted \(pid \d+\)/);
  expect(isRunning(s.pid('worker')!)).toBe(true);
  expect(await apiPid(s.port)).toBe(api); // the api was not touched

  const restartedWorker = s.pid('worker')!;
  // SIGTERM once the new worker is running (a process still starting dies of it silently)
  await eventually(async () => expect(s.output().split('worker running').length).toBe(3), 10_000);
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
  const output = s.output();
  const stopping = output.indexOf('[dev] stopping api, worker, then infra...');
  expect(stopping).toBeGreaterThan(-1);
  // api and worker stopped on SIGTERM before the infrastructure, and nothing came back
  expect(output.indexOf('worker stopped')).toBeGreaterThan(stopping);
  expect(output.indexOf('[dev] infra stopped')).toBeGreaterThan(output.indexOf('worker stopped'));
  expect(output.slice(stopping)).not.toMatch(/restart/);
  expect(output.trimEnd().endsWith('[dev] stopped')).toBe(true);
  for (const pid of [api, restartedWorker]) expect(isRunning(pid)).toBe(false);
  await expect(fetch(`http://127.0.0.1:${s.port}/readyz`)).rejects.toThrow();
}, 40_000);

test('a process that keeps crashing is retried with a doubling back-off, capped, and the line says so', async () => {
  stack = await startStack(['--with-crashing']);
  const s = stack;
  await eventually(async () => expect(s.output()).toMatch(/crashing exited .*\(4 crashes in a row\)/), 20_000);
  const lines = s
    .output()
    .split('\n')
    .filter((line) => line.startsWith('[dev] crashing exited'));
  expect(lines.slice(0, 4)).toEqual([
    '[dev] crashing exited unexpectedly (exit code 3); restarting in 0.2 s',
    '[dev] crashing exited unexpectedly (exit code 3) (2 crashes in a row); restarting in 0.4 s',
    '[dev] crashing exited unexpectedly (exit code 3) (3 crashes in a row); restarting in 0.8 s; it keeps crashing, retrying at the longest back-off',
    '[dev] crashing exited unexpectedly (exit code 3) (4 crashes in a row); restarting in 0.8 s; it keeps crashing, retrying at the longest back-off',
  ]);
  // its stderr is shown under its name
  expect(s.output()).toMatch(/ crashing Error: cannot connect to Temporal\n/);
  s.child.kill('SIGINT');
  expect(await s.exited).toBe(0);
});

test('a crash whose output closes only after the restart does not hide the new process from the stop', async () => {
  const marker = path.join(await mkdtemp(path.join(tmpdir(), 'dev-stack-')), 'crashed');
  stack = await startStack([`--with-lingering=${marker}`]);
  const s = stack;
  // The crashed run's output closes (its child let go) after its replacement is running.
  await eventually(async () => expect(s.output()).toMatch(/lingering running[^]*lingering child done/), 15_000);
  expect(s.output()).toMatch(/\[dev\] lingering restarted \(pid \d+\)/);
  const replacement = s.pid('lingering')!;
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
  expect(s.output()).toContain('lingering stopped');
  expect(isRunning(replacement)).toBe(false);
});

test('log lines are printed for people: time, level, process, message, fields', async () => {
  stack = await startStack();
  const s = stack;
  await eventually(
    async () => expect(s.output()).toMatch(/worker running[^]*api listening|api listening[^]*worker running/),
    15_000,
  );
  expect(s.output()).toMatch(new RegExp(`\\n\\d\\d:\\d\\d:\\d\\d INFO {2}api {5}api listening {2}port=${s.port}\\n`));
  expect(s.output()).toMatch(/\n\d\d:\d\d:\d\d INFO {2}worker {2}worker running {2}taskQueue=fleet\n/);
  expect(s.output()).not.toContain('{"level"');
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
});

describe('formatLogLine', () => {
  const plain = { color: false };
  test('an error keeps its stack under the line; long and structured fields are short', () => {
    const line = JSON.stringify({
      level: 50,
      time: '2026-11-24T10:00:00.000Z',
      service: 'api',
      msg: 'request failed',
      requestId: 'r-1',
      body: { name: 'x'.repeat(200) },
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at handler (api/app.ts:1:1)' },
    });
    const [head, ...stack] = formatLogLine('api', line, plain).split('\n');
    expect(head).toMatch(/^\d\d:\d\d:\d\d ERROR api {5}request failed {2}requestId=r-1 body=\{"name":"x+…$/);
    expect(head!.length).toBeLessThan(200);
    expect(stack).toEqual(['    Error: boom', '        at handler (api/app.ts:1:1)']);
  });

  test('a message of several lines keeps its fields on the first line and indents the rest', () => {
    const line = JSON.stringify({ level: 30, time: 0, msg: 'bundle\n  42 modules', taskQueue: 'fleet' });
    const [head, rest] = formatLogLine('worker', line, plain).split('\n');
    expect(head).toMatch(/^\d\d:\d\d:\d\d INFO {2}worker {2}bundle {2}taskQueue=fleet$/);
    expect(rest).toBe('      42 modules');
  });

  test('a line that is not a log record is printed as it is, after the process name', () => {
    expect(formatLogLine('worker', 'worker failed: ECONNREFUSED', plain)).toBe(
      '               worker  worker failed: ECONNREFUSED',
    );
    expect(formatLogLine('worker', '{"not":"a record"}', plain)).toBe('               worker  {"not":"a record"}');
  });

  test('warnings and errors are coloured only when asked', () => {
    const warn = JSON.stringify({ level: 40, time: 0, msg: 'slow' });
    expect(formatLogLine('api', warn, { color: true })).toContain('\x1b[33mWARN \x1b[0m');
    expect(formatLogLine('api', warn, plain)).not.toContain('\x1b');
  });
});

test('the back-off doubles from the first delay and stops at the cap', () => {
  const backoff = { firstMs: 1000, maxMs: 30_000, stableMs: 60_000 };
  expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => restartDelayMs(backoff, n))).toEqual([
    1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
  ]);
});
