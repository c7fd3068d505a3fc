import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Settings } from './settings';

/**
 * The api's Temporal client. The connection is lazy, so the api starts (and serves what
 * needs no workflow) while Temporal is still coming up; `/readyz` reports its health.
 */
export function createTemporal(settings: Pick<Settings, 'temporal'>) {
  const connection = Connection.lazy({ address: settings.temporal.address });
  const client = new Client({ connection, namespace: settings.temporal.namespace });
  return {
    client,
    connection,
    healthy: async () => {
      await connection.ensureConnected();
      await connection.healthService.check({});
    },
  };
}

/**
 * How long an api request waits to learn whether the Temporal server answers at all, before
 * it sends an operation: with Temporal down, a request is a 503 within this (plus the rest of
 * the request), not after the operation's own deadline (docs/deployment.md, "When a
 * dependency is down").
 */
export const TEMPORAL_PROBE_MS = 1_500;

/** Resolves when the Temporal server answers (its system info: the service every call goes to) within `ms`; otherwise throws. */
export async function temporalAnswers(client: Client, ms = TEMPORAL_PROBE_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([
      client.withDeadline(Date.now() + ms, () => client.workflowService.getSystemInfo({})),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** gRPC's NOT_FOUND status code. */
const GRPC_NOT_FOUND = 5;

/**
 * An update-with-start that reached a run which closed before accepting the update. The
 * server answers NOT_FOUND: Temporal's "workflow update was aborted by closing workflow"
 * arrives as a WorkflowNotFoundError; the time-skipping test server's "update <id> not
 * found", inside the multi-operation's failure, as the gRPC error itself.
 */
function reachedClosingRun(error: unknown): boolean {
  return error instanceof WorkflowNotFoundError || (isGrpcServiceError(error) && Number(error.code) === GRPC_NOT_FOUND);
}

/**
 * Runs an update-with-start, and runs it again when the run it reached closed before
 * accepting the update. A run that is ending (its rollout has just completed) can be sent an
 * operation it will never accept (`reachedClosingRun`). The update was not applied, and sent
 * again it starts the next run, which applies it.
 */
export async function updateWithStartAcrossClosingRuns<T>(send: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      if (!reachedClosingRun(error) || attempt >= attempts) throw error;
    }
  }
}
