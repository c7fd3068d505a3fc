// Every workflow the worker registers, under the type names workflows/definitions.ts
// declares (checked below). Workflows import only activity *types*.
import type {
  OutboxRetentionWorkflow,
  RolloutWorkflow,
  outboxRetentionWorkflowType,
  rolloutWorkflowType,
} from './definitions';
import { outboxRetentionWorkflow } from './outbox-retention';
import { rolloutWorkflow } from './rollout';

export { outboxRetentionWorkflow, rolloutWorkflow };

/** Fails to compile when a registered name or signature drifts from its definition. */
export type Registered = {
  [K in typeof rolloutWorkflowType]: RolloutWorkflow;
} & { [K in typeof outboxRetentionWorkflowType]: OutboxRetentionWorkflow };
const registered: Registered = { rolloutWorkflow, outboxRetentionWorkflow };
void registered;
