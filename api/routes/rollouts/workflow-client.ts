/**
 * The api's side of the rollout workflow: start it on create, and send operators'
 * operations as Updates (with start: a finished rollout's workflow is started again, for a
 * rollback). An operation answers what the workflow accepted, or the problem it refused
 * with. Workflow, update and query come from the shared definitions (workflows/definitions.ts).
 */
import { ApplicationFailure, TypedSearchAttributes } from '@temporalio/common';
import {
  WithStartWorkflowOperation,
  WorkflowIdConflictPolicy,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import type { Settings } from '../../../platform/settings';
import type { RolloutRow } from '../../../db/repos/rollouts';
import { describeRollout } from '../../../domain/rollouts';
import {
  ROLLOUT_FAILURES,
  operateRolloutUpdate,
  rolloutWorkflowId,
  rolloutWorkflowType,
  type RolloutOperationRequest,
  type RolloutOperationResult,
  type RolloutWorkflow,
  type RolloutWorkflowInput,
} from '../../../workflows/definitions';
import { configurationIdKey, rolloutIdKey, rolloutStateKey, tenantIdKey } from '../../../workflows/search-attributes';
import { problems } from '../../problems';

/** How long an operation waits for the workflow to accept or refuse it. */
const OPERATION_DEADLINE_MS = 15_000;

export class RolloutWorkflows {
  constructor(
    private readonly client: Client | undefined,
    private readonly settings: Pick<Settings, 'temporal'>,
  ) {}

  /**
   * `configurationName` names the configuration in the summary and details the Temporal UI
   * shows for the execution (its user metadata), instead of a bare id.
   */
  private startOptions(rollout: RolloutRow, configurationName: string) {
    const args: [RolloutWorkflowInput] = [{ rolloutId: rollout.id, tenantId: rollout.tenant_id }];
    const { summary, details } = describeRollout(rollout, configurationName);
    return {
      staticSummary: summary,
      staticDetails: details,
      workflowId: rolloutWorkflowId(rollout.id),
      taskQueue: this.settings.temporal.taskQueue,
      args,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      typedSearchAttributes: new TypedSearchAttributes([
        { key: tenantIdKey, value: rollout.tenant_id },
        { key: rolloutIdKey, value: rollout.id },
        { key: configurationIdKey, value: rollout.configuration_id },
        { key: rolloutStateKey, value: rollout.state },
      ]),
    };
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
        client.workflow.executeUpdateWithStart(operateRolloutUpdate, {
          args: [request],
          startWorkflowOperation: new WithStartWorkflowOperation<RolloutWorkflow>(
            rolloutWorkflowType,
            this.startOptions(rollout, configurationName),
          ),
        }),
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
