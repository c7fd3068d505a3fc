/**
 * Names shared by the api, the worker and the workflows: workflow ids (one helper per
 * workflow, readable in the Temporal UI), and later the signals, updates and queries.
 */
export const outboxRetentionWorkflowId = () => 'outbox-retention';

export interface OutboxRetentionInput {
  retentionDays: number;
  intervalSeconds: number;
}
