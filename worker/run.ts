import { Client, WorkflowIdConflictPolicy } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Knex } from 'knex';
import { createActivities } from '../activities';
import type { Settings } from '../api/settings';
import { outboxRetentionWorkflowId } from '../workflows/definitions';

export interface WorkerHandle {
  worker: Worker;
  connection: NativeConnection;
  /** Resolves when the worker has stopped (after `worker.shutdown()`). */
  running: Promise<void>;
}

/**
 * Connects to Temporal, registers every workflow and activity, and makes sure the
 * singleton maintenance workflows are running. `bundle` lets tests reuse one bundle.
 */
export async function startWorker(
  settings: Readonly<Settings>,
  db: Knex,
  bundle?: WorkerOptions['workflowBundle'],
): Promise<WorkerHandle> {
  const connection = await NativeConnection.connect({ address: settings.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: settings.temporal.namespace,
    taskQueue: settings.temporal.taskQueue,
    activities: createActivities({ db }),
    ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
  });
  const running = worker.run();
  const client = new Client({ connection, namespace: settings.temporal.namespace });
  await client.workflow.start('outboxRetentionWorkflow', {
    workflowId: outboxRetentionWorkflowId(settings.temporal.taskQueue),
    taskQueue: settings.temporal.taskQueue,
    args: [{ retentionDays: settings.events.retentionDays, intervalSeconds: 3600 }],
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
  });
  return { worker, connection, running };
}
