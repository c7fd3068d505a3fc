/**
 * What every activity shares: heartbeats while long database work runs, and the
 * translation of domain refusals into failures Temporal does not retry.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { DomainError } from '../domain/errors';

/**
 * Heartbeat interval while a single long step runs. Well inside the shortest heartbeat
 * timeout an activity runs under (10 s for the waiting activities), so a push that takes
 * a minute at 100,000 agents is not timed out and retried while it still holds its locks.
 */
const HEARTBEAT_EVERY_MS = 2_000;

/**
 * Runs `work`, heartbeating every 2 s until it settles. Heartbeats prove the worker is
 * alive; they do not interrupt the work (a cancellation is seen at the next await that
 * looks for it, as before).
 */
export async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Wraps each activity so a DomainError (a policy denial, a missing object, a version that
 * cannot be pushed) fails it for good: retrying cannot change the answer.
 */
export function failDomainErrorsForGood<A extends Record<string, (...args: never[]) => Promise<unknown>>>(
  activities: A,
): A {
  const wrapped: Record<string, (...args: never[]) => Promise<unknown>> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = async (...args) => {
      try {
        return await activity(...args);
      } catch (error) {
        if (error instanceof DomainError) throw ApplicationFailure.nonRetryable(error.message, error.name);
        throw error;
      }
    };
  }
  return wrapped as A;
}
