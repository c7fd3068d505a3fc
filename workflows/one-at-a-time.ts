import { condition } from '@temporalio/workflow';

/**
 * One piece of work at a time, once the workflow is `ready` (it has loaded its state): a
 * workflow's own transitions and operators' updates never interleave. `busy` says whether
 * one runs now.
 */
export function oneAtATime(ready: () => boolean) {
  let busy = false;
  const run = async <T>(work: () => Promise<T>): Promise<T> => {
    // Several waiters can be released by one change, so each re-checks after it wakes.
    while (busy || !ready()) await condition(() => !busy && ready());
    busy = true;
    try {
      return await work();
    } finally {
      busy = false;
    }
  };
  return { busy: () => busy, run };
}
