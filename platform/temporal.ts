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

/** How long an api request waits to learn whether the Temporal server is there, before it sends an operation. */
export const TEMPORAL_PROBE_MS = 1_500;

/** The Temporal server refused or dropped the connection: nothing can be sent to it now. */
export class TemporalDown extends Error {
  override readonly name = 'TemporalDown';
}

/** gRPC's UNAVAILABLE status code: the connection was refused, reset, or could not be made. */
const GRPC_UNAVAILABLE = 14;

/**
 * A second connection to the client's server, only for `temporalAnswers`: without the client's
 * retries, so a refused connection is an answer at once (with them, it is retried until the
 * deadline), and no retry outlives the probe.
 */
const probes = new WeakMap<Client, Connection>();

function probeOf(client: Client): Connection | undefined {
  const options = (client.connection as Partial<Connection>).options;
  if (!options) return undefined;
  let probe = probes.get(client);
  if (!probe) probes.set(client, (probe = Connection.lazy({ ...options, interceptors: [] })));
  return probe;
}

/**
 * Before an api operation that needs a workflow: throws TemporalDown when the Temporal server
 * refuses the connection (or is not there) within `ms`, so the request is a 503 at once, not
 * after the operation's own deadline (docs/deployment.md, "When a dependency is down"). A
 * server that is only slow to answer is not down: the operation goes on to its deadline.
 */
export async function temporalAnswers(client: Client, ms = TEMPORAL_PROBE_MS): Promise<void> {
  const probe = probeOf(client);
  if (!probe) return;
  try {
    await probe.withDeadline(Date.now() + ms, () => probe.workflowService.getSystemInfo({}));
  } catch (error) {
    if (isGrpcServiceError(error) && Number(error.code) === GRPC_UNAVAILABLE)
      throw new TemporalDown(error.details || error.message);
  }
}

/** Closes the probe connection of `client` (the api's close). */
export async function closeTemporalProbe(client: Client): Promise<void> {
  const probe = probes.get(client);
  probes.delete(client);
  await probe?.close().catch(() => {});
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
