/**
 * The parsing threads: tasks run off the event loop, within a deadline and a heap limit, a
 * bounded number waiting; a thread that breaks a limit is replaced.
 */
import { createThreadPool, TaskTooCostly, ThreadPoolBusy, type ThreadPool } from '../../platform/thread-pool';

const TASKS = require.resolve('./fixtures/thread-tasks');

let pool: ThreadPool;
afterEach(() => pool?.close());

test('a task runs on a thread and answers its value; a thrown error comes back as one', async () => {
  pool = createThreadPool({ size: 2, maxQueued: 4, timeoutMs: 30_000, heapMb: 64 });
  await expect(pool.run(TASKS, 'double', [21])).resolves.toBe(42);
  await expect(pool.run(TASKS, 'refuse', [])).rejects.toThrow('refused on purpose');
});

test('the event loop is free while threads work: a timer fires before a long task ends', async () => {
  pool = createThreadPool({ size: 1, maxQueued: 4, timeoutMs: 30_000, heapMb: 64 });
  let task = 'running';
  const running = pool.run(TASKS, 'spin', [1500]).then(() => (task = 'done'));
  const atTimer = await new Promise<string>((resolve) => setTimeout(() => resolve(task), 50));
  expect(atTimer).toBe('running');
  await running;
});

test('a task past its deadline ends its thread and fails; the next task gets a new thread', async () => {
  pool = createThreadPool({ size: 1, maxQueued: 4, timeoutMs: 300, heapMb: 64 });
  const failure = await pool.run(TASKS, 'spin', [60_000]).catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(TaskTooCostly);
  expect((failure as TaskTooCostly).limit).toBe('time');
  await expect(pool.run(TASKS, 'double', [2])).resolves.toBe(4);
});

test('a task over the heap limit ends its thread and fails; the next task gets a new thread', async () => {
  pool = createThreadPool({ size: 1, maxQueued: 4, timeoutMs: 60_000, heapMb: 32 });
  const failure = await pool.run(TASKS, 'hoard', []).catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(TaskTooCostly);
  expect((failure as TaskTooCostly).limit).toBe('memory');
  await expect(pool.run(TASKS, 'double', [3])).resolves.toBe(6);
});

test('at most size tasks run, maxQueued wait, and one more is refused at once', async () => {
  pool = createThreadPool({ size: 1, maxQueued: 2, timeoutMs: 30_000, heapMb: 64 });
  const running = [pool.run(TASKS, 'spin', [400]), pool.run(TASKS, 'double', [1]), pool.run(TASKS, 'double', [2])];
  expect(pool.waiting).toBe(2);
  await expect(pool.run(TASKS, 'double', [3])).rejects.toBeInstanceOf(ThreadPoolBusy);
  await expect(Promise.all(running)).resolves.toEqual([expect.any(Number), 2, 4]);
  expect(pool.threads).toBe(1);
});
