/**
 * Worker threads for CPU-heavy pure functions (parsing a caller's 1 MiB document), so that
 * they never hold the event loop: while they run, every other request, the hub and the
 * health probes are answered. A task names a module and one of its exported functions; its
 * arguments and result cross by structured clone.
 *
 * Each thread has a heap limit and each task a deadline: a task over either ends its thread
 * (a new one takes its place) and fails with TaskTooCostly. The deadline counts the task's
 * own work, from when its function starts: not a new thread's start-up nor the first load of
 * its module, which a busy machine can make slow. At most `size` tasks run at once
 * and `maxQueued` wait; beyond that a task fails at once with ThreadPoolBusy.
 */
import { availableParallelism } from 'node:os';
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';

export class ThreadPoolBusy extends Error {
  override readonly name = 'ThreadPoolBusy';
}

/** The task needed more time or memory than a thread may spend. */
export class TaskTooCostly extends Error {
  override readonly name = 'TaskTooCostly';
  constructor(readonly limit: 'time' | 'memory') {
    super(limit === 'time' ? 'the task ran out of time' : 'the task ran out of memory');
  }
}

export interface ThreadPoolOptions {
  /** Threads at most (default: the cores). */
  size?: number;
  /** Tasks that may wait for a thread. */
  maxQueued: number;
  /** A task's deadline. */
  timeoutMs: number;
  /** A thread's heap (V8 old generation). */
  heapMb: number;
  /** A thread idle this long ends (its memory goes back to the system). */
  idleMs?: number;
}

interface Task {
  module: string;
  fn: string;
  args: unknown[];
  resolve(value: unknown): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  task?: Task;
  timer?: NodeJS.Timeout;
}

type Answer = { started: true } | { ok: true; value: unknown } | { ok: false; message: string };

/** The thread's code: under tsx or jest the sources are TypeScript, so it loads tsx first. */
function spawn(heapMb: number): Worker {
  const entry = join(__dirname, `thread-entry${extname(__filename)}`);
  const resourceLimits = { maxOldGenerationSizeMb: heapMb };
  if (extname(__filename) !== '.ts') return new Worker(entry, { resourceLimits });
  const code = `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(entry)});`;
  return new Worker(code, { eval: true, resourceLimits });
}

export function createThreadPool(options: ThreadPoolOptions) {
  const size = options.size ?? availableParallelism();
  const idleMs = options.idleMs ?? 10_000;
  const threads = new Set<Thread>();
  const idle: Thread[] = [];
  const queue: Task[] = [];
  const idleTimers = new Map<Thread, NodeJS.Timeout>();

  function start(): Thread {
    const thread: Thread = { worker: spawn(options.heapMb) };
    thread.worker.unref();
    thread.worker.on('message', (answer: Answer) => {
      const task = thread.task;
      if ('started' in answer) {
        if (task) startDeadline(thread, task);
        return;
      }
      finish(thread);
      if (!task) return;
      if (answer.ok) task.resolve(answer.value);
      else task.reject(new Error(answer.message));
    });
    thread.worker.on('error', (error: NodeJS.ErrnoException) => {
      const task = thread.task;
      end(thread);
      task?.reject(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new TaskTooCostly('memory') : error);
    });
    thread.worker.on('exit', () => {
      const task = thread.task;
      end(thread);
      task?.reject(new Error('the thread exited'));
    });
    threads.add(thread);
    return thread;
  }

  /** A thread that failed or timed out goes; the queue goes on with a new one. */
  function end(thread: Thread): void {
    if (!threads.delete(thread)) return;
    clearTimeout(thread.timer);
    clearTimeout(idleTimers.get(thread));
    idleTimers.delete(thread);
    const at = idle.indexOf(thread);
    if (at >= 0) idle.splice(at, 1);
    void thread.worker.terminate();
    thread.task = undefined;
    pump();
  }

  function finish(thread: Thread): void {
    clearTimeout(thread.timer);
    thread.task = undefined;
    thread.worker.unref();
    idle.push(thread);
    idleTimers.set(thread, setTimeout(() => end(thread), idleMs).unref());
    pump();
  }

  function assign(thread: Thread, task: Task): void {
    clearTimeout(idleTimers.get(thread));
    idleTimers.delete(thread);
    thread.task = task;
    thread.worker.ref(); // a task under way keeps the process alive
    thread.worker.postMessage({ module: task.module, fn: task.fn, args: task.args });
  }

  function startDeadline(thread: Thread, task: Task): void {
    thread.timer = setTimeout(() => {
      end(thread);
      task.reject(new TaskTooCostly('time'));
    }, options.timeoutMs);
  }

  function pump(): void {
    while (queue.length > 0) {
      const thread = idle.pop() ?? (threads.size < size ? start() : undefined);
      if (!thread) return;
      assign(thread, queue.shift()!);
    }
  }

  return {
    /** Runs `module`'s exported `fn(...args)` on a thread. */
    run<T>(module: string, fn: string, args: unknown[]): Promise<T> {
      if (queue.length >= options.maxQueued) return Promise.reject(new ThreadPoolBusy('every thread is busy'));
      return new Promise<T>((resolve, reject) => {
        queue.push({ module, fn, args, resolve, reject });
        pump();
      });
    },
    /** Threads now, and tasks waiting (for tests and metrics). */
    get threads() {
      return threads.size;
    },
    get waiting() {
      return queue.length;
    },
    async close(): Promise<void> {
      for (const task of queue.splice(0)) task.reject(new Error('the pool closed'));
      await Promise.all([...threads].map((thread) => thread.worker.terminate()));
      threads.clear();
    },
  };
}

export type ThreadPool = ReturnType<typeof createThreadPool>;
