/**
 * The api's side of `federated-rollout:<id>`: start it once the federated rollout is
 * committed, and send operators' operations as Updates (with start: a finished federated
 * rollout's workflow is started again, for a rollback), answered once the workflow applied
 * or refused them. Workflow and update come from workflows/definitions.ts.
 */
import { ApplicationFailure, TypedSearchAttributes, WorkflowIdConflictPolicy } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { FederatedRolloutRow } from '../../../db/repos/federated-rollouts';
import type { Settings } from '../../../platform/settings';
import { updateWithStartAcrossClosingRuns } from '../../../platform/temporal';
import {
  ROLLOUT_FAILURES,
  federatedRolloutWorkflowId,
  federatedRolloutWorkflowType,
  operateFederatedRolloutUpdate,
  type FederatedRolloutOperationRequest,
  type FederatedRolloutOperationResult,
  type FederatedRolloutWorkflow,
  type FederatedRolloutWorkflowInput,
} from '../../../workflows/definitions';
import { configurationIdKey, federatedRolloutStateKey, tenantIdKey } from '../../../workflows/search-attributes';
import { sendToTemporal, type UpdateTarget } from '../../../platform/temporal';
import { updateTarget } from '../../../platform/worker-presence';
import { problems } from '../../problems';

/**
 * How long an operation waits for the workflow: it passes the operation on to every
 * installation, each call within Federation:PeerTimeoutSeconds, all at once.
 */
const OPERATION_DEADLINE_MS = 30_000;

export class FederatedRolloutWorkflows {
  private readonly updateOn: UpdateTarget;

  constructor(
    private readonly client: Client | undefined,
    private readonly settings: Pick<Settings, 'temporal'>,
    db: Knex,
  ) {
    this.updateOn = updateTarget(db, settings.temporal.taskQueue);
  }

  private configured(): Client {
    if (!this.client)
      throw problems.unavailable('Federated rollouts need Temporal, and this api has no Temporal client configured.');
    return this.client;
  }

  private startOptions(row: FederatedRolloutRow) {
    const args: [FederatedRolloutWorkflowInput] = [{ federatedRolloutId: row.id, tenantId: row.tenant_id }];
    return {
      staticSummary: `Federated rollout ${row.name ?? row.id}: version ${row.version}, ${row.mode}`,
      workflowId: federatedRolloutWorkflowId(row.id),
      taskQueue: this.settings.temporal.taskQueue,
      args,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      typedSearchAttributes: new TypedSearchAttributes([
        { key: tenantIdKey, value: row.tenant_id },
        { key: configurationIdKey, value: row.configuration_id },
        { key: federatedRolloutStateKey, value: row.state },
      ]),
    };
  }

  /** Starts the workflow (an existing one is kept). */
  async start(row: FederatedRolloutRow): Promise<void> {
    const client = this.configured();
    await sendToTemporal(client, () =>
      client.withDeadline(Date.now() + OPERATION_DEADLINE_MS, () =>
        client.workflow.start<FederatedRolloutWorkflow>(federatedRolloutWorkflowType, this.startOptions(row)),
      ),
    ).catch(unavailable);
  }

  async operate(
    row: FederatedRolloutRow,
    request: FederatedRolloutOperationRequest,
  ): Promise<FederatedRolloutOperationResult> {
    const client = this.configured();
    try {
      // An Update the workflow must take: sendToTemporal asks for a worker first.
      return await sendToTemporal(
        client,
        () =>
          client.withDeadline(Date.now() + OPERATION_DEADLINE_MS, () =>
            updateWithStartAcrossClosingRuns(() =>
              client.workflow.executeUpdateWithStart(operateFederatedRolloutUpdate, {
                args: [request],
                startWorkflowOperation: new WithStartWorkflowOperation<FederatedRolloutWorkflow>(
                  federatedRolloutWorkflowType,
                  this.startOptions(row),
                ),
              }),
            ),
          ),
        this.updateOn,
      );
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
        if (error.cause.type === ROLLOUT_FAILURES.preconditionFailed)
          throw problems.preconditionFailed('federated rollout', row.id);
        if (error.cause.type === ROLLOUT_FAILURES.invalidTransition)
          throw problems.invalidTransition(error.cause.message);
      }
      return unavailable(error);
    }
  }
}

function unavailable(error: unknown): never {
  throw (
    problems.ofTemporal(error, "the federated rollout's workflow") ??
    problems.unavailable(
      `The federated rollout's workflow did not answer (${(error as Error).message}); the operation may not have been applied. Retry, or check the worker and Temporal.`,
    )
  );
}
