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

/*
 * Everything the api sends to Temporal (a workflow's start, a signal, an Update) goes through
 * `sendToTemporal`, so that a Temporal server that is gone, or hung, or has no worker, is a
 * 503 within about 2 s, not a wait for the call's own deadline (10-30 s) (docs/deployment.md,
 * "When a dependency is down"). It asks over a probe connection of its own.
 */

/** How long a probe waits for the Temporal server's answer. */
export const TEMPORAL_PROBE_MS = 1_000;

/** How long a call sent to Temporal waits for its answer before the api asks whether the server is still there, and again between probes. */
export const CALL_WATCH_MS = 1_500;

/** The Temporal server refused or reset the connection before a call: nothing was sent to it. */
export class TemporalDown extends Error {
  override readonly name = 'TemporalDown';
}

/** Temporal stopped answering once a call was sent to it: what was sent may still be applied. */
export class TemporalLost extends Error {
  override readonly name = 'TemporalLost';
}

/** No worker polls the task queue: an Update would wait for one (and be applied whenever one came). */
export class NoWorker extends Error {
  override readonly name = 'NoWorker';
}

/** The last worker of the task queue stopped once an Update was sent: it may be applied when one is back. */
export class WorkerGone extends Error {
  override readonly name = 'WorkerGone';
}

/** An Update's task queue, and how to ask whether a worker process serving it is alive. */
export interface UpdateTarget {
  taskQueue: string;
  /** true or false; undefined when it cannot tell (platform/worker-presence.ts). */
  workerPresent?: () => Promise<boolean | undefined>;
}

/**
 * Sends a call to Temporal (`send`), and answers its answer. First, and together: is the
 * server there (refused or reset: TemporalDown, nothing sent), and, for an Update a workflow on
 * `updateOn` must take, is a worker there: none alive by Postgres (its presence lock) or none
 * polling for WORKER_GONE_MS is NoWorker, nothing sent. Once sent, the call is watched: every
 * CALL_WATCH_MS while it has not answered, the server is probed again; refused, or silent to
 * two probes in a row (the first may be the one before sending), is TemporalLost, so a hung
 * server is found out in about 2 s; for an Update, the last worker gone meanwhile is
 * WorkerGone. A server that answers the probes, with a worker, is only slow (a busy machine),
 * and the call goes on to its own deadline. A call given up on is cancelled (what reached the
 * server may still be applied).
 */
export async function sendToTemporal<T>(client: Client, send: () => Promise<T>, updateOn?: UpdateTarget): Promise<T> {
  const [first, alive, polled] = await Promise.all([
    probeServer(client).catch((error: unknown) => {
      throw new TemporalDown((error as Error).message);
    }),
    updateOn ? workerAlive(updateOn) : true,
    updateOn ? workerPolls(client, updateOn.taskQueue) : true,
  ]);
  if (!alive) throw new NoWorker(`No worker is running for task queue ${updateOn!.taskQueue}`);
  if (!polled)
    throw new NoWorker(`No worker has polled task queue ${updateOn!.taskQueue} for ${WORKER_GONE_MS / 1000} s`);
  // Given up on, the call is cancelled, so that no retry of it outlives the request.
  const abandon = new AbortController();
  const call = client.withAbortSignal(abandon.signal, send);
  let answered = false;
  const settled = call.then(
    () => (answered = true),
    () => (answered = true),
  );
  // Two silent probes in a row are a hung server; one is a busy moment (a stalled event loop).
  let silences = first === 'silent' ? 1 : 0;
  while (!answered) {
    if (silences === 0) await Promise.race([settled, delay(CALL_WATCH_MS)]);
    if (answered) break;
    const probe = await Promise.race([
      probeServer(client).catch((error: unknown) => error as Error),
      settled.then(() => undefined),
    ]);
    if (answered || probe === undefined) break;
    let lost: TemporalLost | WorkerGone | undefined;
    if (probe instanceof Error) lost = new TemporalLost(probe.message);
    else if (probe === 'answered') silences = 0;
    else if (++silences >= 2)
      lost = new TemporalLost(`no answer to two probes in a row, ${TEMPORAL_PROBE_MS / 1000} s each`);
    if (!lost && updateOn && !answered && !(await workerAlive(updateOn)))
      lost = new WorkerGone(`The last worker for task queue ${updateOn.taskQueue} stopped`);
    if (lost) {
      abandon.abort();
      throw lost;
    }
  }
  return call;
}

/** Resolves after `ms`, without holding the process open. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** gRPC status codes. */
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/**
 * A second connection to the client's server, only for the probes: without the client's
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
 * Asks the server for its system info: throws when the connection is refused or reset, and
 * answers 'silent' when there is no answer within TEMPORAL_PROBE_MS. Anything else (an
 * answer, or an error from a server that answered) is 'answered'.
 */
async function probeServer(client: Client): Promise<'answered' | 'silent'> {
  const probe = probeOf(client);
  if (!probe) return 'answered';
  try {
    await probe.withDeadline(Date.now() + TEMPORAL_PROBE_MS, () => probe.workflowService.getSystemInfo({}));
    return 'answered';
  } catch (error) {
    if (!isGrpcServiceError(error)) return 'answered';
    if (Number(error.code) === GRPC_UNAVAILABLE) throw new Error(error.details || error.message, { cause: error });
    return Number(error.code) === GRPC_DEADLINE_EXCEEDED ? 'silent' : 'answered';
  }
}

/**
 * A worker long-polls its task queue a minute at a time, so one not seen polling for longer
 * than this is gone (the server forgets pollers only after five minutes).
 */
export const WORKER_GONE_MS = 90_000;

/** Temporal's enums, by number: TaskQueueKind NORMAL, TaskQueueType WORKFLOW. */
export const NORMAL_QUEUE = 1;
export const WORKFLOW_TASKS = 1;

/**
 * False when no worker has polled `taskQueue` for WORKER_GONE_MS. Any other outcome (the
 * server slow, the call unsupported, as on the time-skipping test server) is true: the call goes on.
 */
async function workerPolls(client: Client, taskQueue: string): Promise<boolean> {
  const probe = probeOf(client);
  if (!probe) return true;
  let pollers;
  try {
    ({ pollers } = await probe.withDeadline(Date.now() + TEMPORAL_PROBE_MS, () =>
      probe.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: taskQueue, kind: NORMAL_QUEUE },
        taskQueueType: WORKFLOW_TASKS,
      }),
    ));
  } catch {
    return true;
  }
  const now = Date.now();
  return !!pollers?.some((poller) => poller.lastAccessTime && now - tsToMs(poller.lastAccessTime) < WORKER_GONE_MS);
}

/**
 * Whether a worker process serving the target is alive; when that cannot be told (no way to
 * ask, Postgres starting, or no answer within TEMPORAL_PROBE_MS), yes.
 */
async function workerAlive({ workerPresent }: UpdateTarget): Promise<boolean> {
  if (!workerPresent) return true;
  const present = await Promise.race([
    workerPresent().catch(() => undefined),
    delay(TEMPORAL_PROBE_MS).then(() => undefined),
  ]);
  return present !== false;
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
