// Every workflow the worker registers. Workflows import only activity *types*.
export { outboxRetentionWorkflow } from './outbox-retention';
export { rolloutWorkflow } from './rollout';
