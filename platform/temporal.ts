import { Client, Connection } from '@temporalio/client';
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
 * Runs an update-with-start, and runs it again when the run it reached closed before
 * accepting the update. A run that is ending (its rollout has just completed) can be sent an
 * operation it will never accept: the server then answers NOT_FOUND ("workflow update was
 * aborted by closing workflow"; the time-skipping test server, "Completed workflow"). The
 * update was not applied, and sent again it starts the next run, which applies it.
 */
export async function updateWithStartAcrossClosingRuns<T>(send: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError) || attempt >= attempts) throw error;
    }
  }
}
