import vm from 'node:vm';

/**
 * Runs synchronous work but stops it after `ms`, whatever it is doing: a CEL comprehension
 * nested too deep or a regular expression backtracking catastrophically included (V8's
 * watchdog terminates any JavaScript running under `runInContext`). Starting the watchdog
 * costs ~80 µs, so callers bound a batch of work, not each expression.
 */
const context = vm.createContext({ work: null as null | (() => unknown) });
const script = new vm.Script('work()');

export class BudgetExceeded extends Error {}

export function withinBudget<T>(work: () => T, ms: number): T {
  context.work = work;
  try {
    return script.runInContext(context, { timeout: ms }) as T;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT')
      throw new BudgetExceeded(`exceeded ${ms} ms`);
    throw error;
  } finally {
    context.work = null;
  }
}
