/**
 * The api's side of a Git source's sync loop (`git-sync:<id>`): it only wakes the loop,
 * with signal-with-start, so a source whose loop is not running (never started, or lost)
 * gets one. The loop reads the source from the database at every wake-up and decides;
 * the api never runs a sweep. Workflow, id and signal come from workflows/definitions.ts.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Settings } from '../../../platform/settings';
import {
  gitSyncWakeSignal,
  gitSyncWorkflowId,
  gitSyncWorkflowType,
  type GitSyncWake,
  type GitSyncWorkflow,
} from '../../../workflows/definitions';
import { gitSyncStartOptions } from '../../../workflows/git-sync-start';
import { sendToTemporal } from '../../../platform/temporal';
import { problems } from '../../problems';

/** How long a wake-up may wait for Temporal before the caller is told to retry. */
const SIGNAL_DEADLINE_MS = 10_000;

export interface SourceRef {
  id: string;
  tenant_id: string;
  /** Names the loop in the Temporal UI when it is started. */
  name?: string;
}

export class GitSyncWorkflows {
  constructor(
    private readonly client: Client | undefined,
    private readonly settings: Pick<Settings, 'temporal'>,
  ) {}

  private configured(): Client {
    if (!this.client)
      throw problems.unavailable('Git sources need Temporal, and this api has no Temporal client configured.');
    return this.client;
  }

  /** Wakes the source's loop, starting it when it is not running. Resolves once Temporal has the signal. */
  async wake(source: SourceRef, wake: GitSyncWake): Promise<void> {
    const client = this.configured();
    await sendToTemporal(client, () =>
      client.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
        client.workflow.signalWithStart<GitSyncWorkflow, [GitSyncWake]>(gitSyncWorkflowType, {
          ...gitSyncStartOptions(source, this.settings.temporal.taskQueue),
          signal: gitSyncWakeSignal,
          signalArgs: [wake],
        }),
      ),
    ).catch(unavailable);
  }

  /** Tells a deleted source's loop to read the source (gone) and end; no loop running is fine. */
  async ended(sourceId: string): Promise<void> {
    const client = this.configured();
    await sendToTemporal(client, () =>
      client.withDeadline(Date.now() + SIGNAL_DEADLINE_MS, () =>
        client.workflow.getHandle(gitSyncWorkflowId(sourceId)).signal(gitSyncWakeSignal, { reason: 'source-changed' }),
      ),
    ).catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError) return;
      unavailable(error);
    });
  }
}

function unavailable(error: unknown): never {
  throw (
    problems.ofTemporal(error, "the source's sync loop") ??
    problems.unavailable(
      `Temporal did not take the wake-up of the source's sync loop (${(error as Error).message}). Retry, or check Temporal.`,
    )
  );
}
