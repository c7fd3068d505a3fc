/**
 * The api's side of the rollout workflow: start it on create, and send operators'
 * operations as Updates (with start: a finished rollout's workflow is started again, for a
 * rollback). An operation answers what the workflow accepted, or the problem it refused
 * with. Workflow, update and query come from the shared definitions (workflows/definitions.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Settings } from '../../../platform/settings';
import { updateWithStartAcrossClosingRuns } from '../../../platform/temporal';
import type { RolloutRow } from '../../../db/repos/rollouts';
import {
  ROLLOUT_FAILURES,
  operateRolloutUpdate,
  rolloutWorkflowType,
  type RolloutOperationRequest,
  type RolloutOperationResult,
  type RolloutWorkflow,
} from '../../../workflows/definitions';
import { rolloutStartOptions } from '../../../workflows/rollout-start';
import { problems } from '../../problems';

/** How long an operation waits for the workflow to accept or refuse it. */
const OPERATION_DEADLINE_MS = 15_000;

export class RolloutWorkflows {
  constructor(
    private readonly client: Client | undefined,
    private readonly settings: Pick<Settings, 'temporal'>,
  ) {}

  private startOptions(rollout: RolloutRow, configurationName: string) {
    return rolloutStartOptions(rollout, configurationName, this.settings.temporal.taskQueue);
  }

  private temporal(): Client {
    if (!this.client)
      throw problems.unavailable('Rollouts need Temporal, and this api has no Temporal client configured.');
    return this.client;
  }

  /** Starts the rollout's workflow (idempotent: an existing one is kept). */
  async start(rollout: RolloutRow, configurationName: string): Promise<void> {
    const client = this.temporal();
    await client
      .withDeadline(Date.now() + OPERATION_DEADLINE_MS, () =>
        client.workflow.start<RolloutWorkflow>(rolloutWorkflowType, this.startOptions(rollout, configurationName)),
      )
      .catch(unavailable);
  }

  async operate(
    rollout: RolloutRow,
    configurationName: string,
    request: RolloutOperationRequest,
  ): Promise<RolloutOperationResult> {
    const client = this.temporal();
    try {
      return await client.withDeadline(Date.now() + OPERATION_DEADLINE_MS, () =>
        updateWithStartAcrossClosingRuns(() =>
          client.workflow.executeUpdateWithStart(operateRolloutUpdate, {
            args: [request],
            startWorkflowOperation: new WithStartWorkflowOperation<RolloutWorkflow>(
              rolloutWorkflowType,
              this.startOptions(rollout, configurationName),
            ),
          }),
        ),
      );
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
        if (error.cause.type === ROLLOUT_FAILURES.preconditionFailed)
          throw problems.preconditionFailed('rollout', rollout.id);
        if (error.cause.type === ROLLOUT_FAILURES.invalidTransition)
          throw problems.invalidTransition(error.cause.message);
      }
      return unavailable(error);
    }
  }
}

function unavailable(error: unknown): never {
  throw problems.unavailable(
    `The rollout workflow did not answer (${(error as Error).message}); the operation may not have been applied. Retry, or check the worker and Temporal.`,
  );
}
