// Every workflow the worker registers, under the type names workflows/definitions.ts
// declares (checked below). Workflows import only activity *types*.
import type {
  GitSyncWorkflow,
  OutboxRetentionWorkflow,
  RolloutWorkflow,
  gitSyncWorkflowType,
  outboxRetentionWorkflowType,
  rolloutWorkflowType,
} from './definitions';
import { gitSyncWorkflow } from './git-sync';
import { outboxRetentionWorkflow } from './outbox-retention';
import { rolloutWorkflow } from './rollout';

export { gitSyncWorkflow, outboxRetentionWorkflow, rolloutWorkflow };

/** Fails to compile when a registered name or signature drifts from its definition. */
export type Registered = {
  [K in typeof rolloutWorkflowType]: RolloutWorkflow;
} & { [K in typeof outboxRetentionWorkflowType]: OutboxRetentionWorkflow } & {
  [K in typeof gitSyncWorkflowType]: GitSyncWorkflow;
};
const registered: Registered = { rolloutWorkflow, outboxRetentionWorkflow, gitSyncWorkflow };
void registered;
