import { Client, WorkflowIdConflictPolicy } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { createActivities } from '../activities';
import { removeStaleWorkingCopies } from '../activities/git/working-copies';
import { createOutbound, type Outbound } from '../platform/outbound';
import type { Settings } from '../platform/settings';
import { WorkerPresence } from '../platform/worker-presence';
import { activeGitSourcesAfter } from '../db/repos/git-sources';
import { gitSyncStartOptions } from '../workflows/git-sync-start';
import {
  fleetCensusWorkflowId,
  fleetCensusWorkflowType,
  type FleetCensusWorkflow,
  gitSyncWorkflowType,
  type GitSyncWorkflow,
  outboxRetentionWorkflowId,
  outboxRetentionWorkflowType,
  type OutboxRetentionWorkflow,
  peerHealthWorkflowId,
  peerHealthWorkflowType,
  type PeerHealthWorkflow,
} from '../workflows/definitions';

/** The longest window GET /api/fleet/online serves. */
export const FLEET_CENSUS_KEEP_DAYS = 7;

export interface WorkerHandle {
  worker: Worker;
  connection: NativeConnection;
  /** Resolves when the worker has stopped (after `worker.shutdown()`). */
  running: Promise<void>;
}

export interface WorkerOptionsOfOurs {
  /** A workflow bundle made once (tests reuse one). */
  bundle?: WorkerOptions['workflowBundle'];
  /** Receives what activities report (a failed Git sync run). */
  logger?: Logger;
  /** Where repositories and peers may be reached (default: the policy of Outbound:*). */
  outbound?: Outbound;
}

/**
 * Connects to Temporal, registers every workflow and activity, and makes sure the
 * singleton maintenance workflows are running.
 */
export async function startWorker(
  settings: Readonly<Settings>,
  db: Knex,
  { bundle, logger, outbound }: WorkerOptionsOfOurs = {},
): Promise<WorkerHandle> {
  const connection = await NativeConnection.connect({ address: settings.temporal.address });
  const client = new Client({ connection, namespace: settings.temporal.namespace });
  const worker = await Worker.create({
    connection,
    namespace: settings.temporal.namespace,
    taskQueue: settings.temporal.taskQueue,
    activities: createActivities({
      db,
      settings,
      logger,
      temporal: client,
      outbound: outbound ?? createOutbound(settings.outbound, { logger }),
    }),
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
    // A waiting activity hears of its cancellation (an abort, a rollback, a pause of a health
    // watch) with the answer to a heartbeat that reaches the server; the rollout waits for it
    // to end, so heartbeats go out at least every second (not 80 % of the heartbeat timeout).
    maxHeartbeatThrottleInterval: '1 second',
    // A workflow's next task goes to the worker that has it cached (its sticky queue); when
    // that worker is gone (killed, its machine lost) another takes the task after this long
    // (the SDK's default is 10 s): an operator's pause waits ~1 s for it, not 10
    // (bench:replicas, docs/deployment.md "When a dependency is down").
    stickyQueueScheduleToStartTimeout: '1 second',
  });
  // While it runs, the worker says it is alive to the api through Postgres (a dead one is a 503 at once).
  const presence = await WorkerPresence.hold(settings.database.url, settings.temporal.taskQueue, logger);
  const running = worker.run().finally(() => presence.release());
  await client.workflow.start<OutboxRetentionWorkflow>(outboxRetentionWorkflowType, {
    workflowId: outboxRetentionWorkflowId(settings.temporal.taskQueue),
    taskQueue: settings.temporal.taskQueue,
    args: [{ retentionDays: settings.events.retentionDays, intervalSeconds: 3600 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  await client.workflow.start<PeerHealthWorkflow>(peerHealthWorkflowType, {
    staticSummary: 'Peer health: pings every federation peer, for ever',
    workflowId: peerHealthWorkflowId(settings.temporal.taskQueue),
    taskQueue: settings.temporal.taskQueue,
    args: [{ intervalSeconds: settings.federation.healthCheckSeconds }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  await client.workflow.start<FleetCensusWorkflow>(fleetCensusWorkflowType, {
    staticSummary: "Fleet census: counts every tenant's agents once a minute, for ever",
    workflowId: fleetCensusWorkflowId(settings.temporal.taskQueue),
    taskQueue: settings.temporal.taskQueue,
    args: [{ keepDays: FLEET_CENSUS_KEEP_DAYS }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  const tidy = keepWorkingCopiesTidy(db, settings.git.workDir, logger);
  void running.finally(() => clearInterval(tidy));
  startMissingGitSyncLoops(client, db, settings.temporal.taskQueue).catch((error: unknown) =>
    logger?.warn({ err: error }, 'starting the missing git-sync loops failed; the next change or webhook starts them'),
  );
  return { worker, connection, running };
}

/** Every hour, and now: this worker's working copies of deleted sources are removed. */
function keepWorkingCopiesTidy(db: Knex, workDir: string, logger: Logger | undefined): NodeJS.Timeout {
  const tidy = () =>
    void removeStaleWorkingCopies(db, workDir).then(
      (removed) => removed > 0 && logger?.info({ removed, workDir }, 'removed working copies of deleted Git sources'),
      (error: unknown) =>
        logger?.warn({ err: error, workDir }, 'removing working copies of deleted Git sources failed'),
    );
  tidy();
  return setInterval(tidy, 3_600_000).unref();
}

/**
 * The api starts a source's loop when the source changes, but a signal that failed after
 * the change committed (Temporal down) left that source without one. Each worker, as it
 * starts, starts the loop of every source not paused that has none (a running loop is left
 * as it is), in the background; a paused source gets its loop when it is resumed.
 */
async function startMissingGitSyncLoops(client: Client, db: Knex, taskQueue: string): Promise<void> {
  const PAGE = 200;
  for (let after: string | null = null; ;) {
    const sources = await activeGitSourcesAfter(db, after, PAGE);
    for (const source of sources) {
      await client.workflow.start<GitSyncWorkflow>(gitSyncWorkflowType, {
        ...gitSyncStartOptions(source, taskQueue),
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      });
    }
    if (sources.length < PAGE) return;
    after = sources.at(-1)!.id;
  }
}
