/**
 * A thread of platform/thread-pool.ts: runs the exported function a task names, and answers
 * its result or its error's message. It says when the function starts, once its module is
 * loaded: the task's deadline counts from there.
 */
import { parentPort } from 'node:worker_threads';

interface Task {
  module: string;
  fn: string;
  args: unknown[];
}

parentPort!.on('message', ({ module, fn, args }: Task) => {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module is the task's to name
    const exported = require(module) as Record<string, (...args: unknown[]) => unknown>;
    parentPort!.postMessage({ started: true });
    parentPort!.postMessage({ ok: true, value: exported[fn]!(...args) });
  } catch (error) {
    parentPort!.postMessage({ ok: false, message: (error as Error).message });
  }
});
