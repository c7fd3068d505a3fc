/**
 * Starting and operating a rollout's workflow, from outside it: the api (an operator's
 * create and operations) and a worker's activity (this installation's part of a federated
 * rollout) call these, so both send the same thing the same way. It is a Temporal client,
 * never loaded by a workflow.
 */
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { InvalidTransitionError, StaleVersionError } from '../domain/errors';
import { updateWithStartAcrossClosingRuns } from '../platform/temporal';
import {
  ROLLOUT_FAILURES,
  operateRolloutUpdate,
  rolloutWorkflowType,
  type RolloutOperationRequest,
  type RolloutOperationResult,
  type RolloutWorkflow,
} from './definitions';
import { rolloutStartOptions, type StartedRollout } from './rollout-start';

/** How long a call waits for Temporal, and an operation for the workflow to accept or refuse it. */
export const ROLLOUT_CALL_DEADLINE_MS = 15_000;

export class RolloutWorkflowClient {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  /** Starts the rollout's workflow (idempotent: an existing run is kept). */
  async start(rollout: StartedRollout, configurationName: string): Promise<void> {
    const options = rolloutStartOptions(rollout, configurationName, this.taskQueue);
    await this.withinDeadline(() => this.client.workflow.start<RolloutWorkflow>(rolloutWorkflowType, options));
  }

  /**
   * Sends an operation as an Update, with start: a finished rollout's workflow is started
   * again (a rollback), and a run that closed before accepting it is passed over for the next.
   * Answers what the workflow accepted; a refusal throws `InvalidTransitionError` (the state
   * does not allow it) or `StaleVersionError` (If-Match names a version it no longer has).
   */
  async operate(
    rollout: StartedRollout,
    configurationName: string,
    request: RolloutOperationRequest,
  ): Promise<RolloutOperationResult> {
    const options = rolloutStartOptions(rollout, configurationName, this.taskQueue);
    try {
      return await this.withinDeadline(() =>
        updateWithStartAcrossClosingRuns(() =>
          this.client.workflow.executeUpdateWithStart(operateRolloutUpdate, {
            args: [request],
            startWorkflowOperation: new WithStartWorkflowOperation<RolloutWorkflow>(rolloutWorkflowType, options),
          }),
        ),
      );
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
        if (error.cause.type === ROLLOUT_FAILURES.preconditionFailed)
          throw new StaleVersionError('rollout', rollout.id);
        if (error.cause.type === ROLLOUT_FAILURES.invalidTransition)
          throw new InvalidTransitionError(error.cause.message);
      }
      throw error;
    }
  }

  private withinDeadline<T>(call: () => Promise<T>): Promise<T> {
    return this.client.withDeadline(Date.now() + ROLLOUT_CALL_DEADLINE_MS, call);
  }
}
