import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
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

/** No worker polls the task queue: an Update would wait for one (and be applied whenever one came). */
export class NoWorker extends Error {
  override readonly name = 'NoWorker';
}

/**
 * A worker long-polls its task queue a minute at a time, so one not seen polling for longer
 * than this is gone (the server forgets pollers only after five minutes).
 */
export const WORKER_GONE_MS = 90_000;

/** Temporal's enums, by number: TaskQueueKind NORMAL, TaskQueueType WORKFLOW. */
const NORMAL_QUEUE = 1;
const WORKFLOW_TASKS = 1;

/**
 * Before an operation a workflow must take (an Update): throws NoWorker when no worker has
 * polled `taskQueue` for WORKER_GONE_MS, so the request is a 503 at once ("nothing was sent")
 * instead of a wait to the operation's deadline and an operation applied whenever a worker
 * comes back. Any other outcome (the server slow, the call unsupported) lets the operation go on.
 */
export async function workerPolls(client: Client, taskQueue: string, ms = TEMPORAL_PROBE_MS): Promise<void> {
  const probe = probeOf(client);
  if (!probe) return;
  let pollers;
  try {
    ({ pollers } = await probe.withDeadline(Date.now() + ms, () =>
      probe.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: taskQueue, kind: NORMAL_QUEUE },
        taskQueueType: WORKFLOW_TASKS,
      }),
    ));
  } catch {
    return;
  }
  const now = Date.now();
  if (!pollers?.some((poller) => poller.lastAccessTime && now - tsToMs(poller.lastAccessTime) < WORKER_GONE_MS))
    throw new NoWorker(`no worker has polled task queue ${taskQueue} for ${WORKER_GONE_MS / 1000} s`);
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
