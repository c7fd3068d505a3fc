import { Client, Connection } from '@temporalio/client';
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
