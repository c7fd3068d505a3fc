/**
 * The api's side of the rollout workflow: start it on create, send operators' operations.
 * What is sent, and how, is `RolloutWorkflowClient` (workflows/rollout-client.ts), shared with
 * a federated rollout's part on this installation; here an api without Temporal, or a
 * Temporal that does not answer, is a 503 problem. The workflow's refusals are domain errors,
 * which the api renders as their problems (409, 412).
 */
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { DomainError } from '../../../domain/errors';
import type { Settings } from '../../../platform/settings';
import type { RolloutOperationRequest, RolloutOperationResult } from '../../../workflows/definitions';
import { RolloutWorkflowClient } from '../../../workflows/rollout-client';
import { sendToTemporal, type UpdateTarget } from '../../../platform/temporal';
import { updateTarget } from '../../../platform/worker-presence';
import type { StartedRollout } from '../../../workflows/rollout-start';
import { problems } from '../../problems';

export class RolloutWorkflows {
  private readonly workflows: RolloutWorkflowClient | undefined;
  private readonly updateOn: UpdateTarget;

  constructor(
    private readonly client: Client | undefined,
    settings: Pick<Settings, 'temporal'>,
    db: Knex,
  ) {
    this.workflows = client && new RolloutWorkflowClient(client, settings.temporal.taskQueue);
    this.updateOn = updateTarget(db, settings.temporal.taskQueue);
  }

  private configured(): { client: Client; workflows: RolloutWorkflowClient } {
    if (!this.client || !this.workflows)
      throw problems.unavailable('Rollouts need Temporal, and this api has no Temporal client configured.');
    return { client: this.client, workflows: this.workflows };
  }

  /** Starts the rollout's workflow (idempotent: an existing one is kept). */
  async start(rollout: StartedRollout, configurationName: string): Promise<void> {
    const { client, workflows } = this.configured();
    await sendToTemporal(client, () => workflows.start(rollout, configurationName)).catch(unavailable);
  }

  /** An operation is an Update the workflow must take (sendToTemporal asks for a worker first). */
  async operate(
    rollout: StartedRollout,
    configurationName: string,
    request: RolloutOperationRequest,
  ): Promise<RolloutOperationResult> {
    const { client, workflows } = this.configured();
    return sendToTemporal(client, () => workflows.operate(rollout, configurationName, request), this.updateOn).catch(
      unavailable,
    );
  }
}

/** A refusal passes as it is; anything else means the workflow did not answer. */
function unavailable(error: unknown): never {
  if (error instanceof DomainError) throw error;
  throw (
    problems.ofTemporal(error, "the rollout's workflow") ??
    problems.unavailable(
      `The rollout workflow did not answer (${(error as Error).message}); the operation may not have been applied. Retry, or check the worker and Temporal.`,
    )
  );
}
