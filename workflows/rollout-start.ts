import { TypedSearchAttributes, WorkflowIdConflictPolicy } from '@temporalio/common';
import type { RolloutRow } from '../db/repos/rollouts';
import { describeRollout } from '../domain/rollouts';
import { rolloutWorkflowId, type RolloutWorkflowInput } from './definitions';
import { configurationIdKey, rolloutIdKey, rolloutStateKey, tenantIdKey } from './search-attributes';

type StartedRollout = Pick<
  RolloutRow,
  | 'id'
  | 'tenant_id'
  | 'state'
  | 'name'
  | 'description'
  | 'version'
  | 'target'
  | 'strategy'
  | 'created_by'
  | 'configuration_id'
>;

/**
 * How a rollout's workflow (`rollout:<id>`) is started, the same from the api (create, and
 * update-with-start on an operation) and from a worker's activity (a federated rollout's part
 * on this installation): an existing run is kept. `configurationName` names the configuration
 * in the summary and details the Temporal UI shows for the execution, instead of a bare id.
 */
export function rolloutStartOptions(rollout: StartedRollout, configurationName: string, taskQueue: string) {
  const args: [RolloutWorkflowInput] = [{ rolloutId: rollout.id, tenantId: rollout.tenant_id }];
  const { summary, details } = describeRollout(rollout, configurationName);
  return {
    staticSummary: summary,
    staticDetails: details,
    workflowId: rolloutWorkflowId(rollout.id),
    taskQueue,
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
