/**
 * Names shared by the api, the worker and the workflows: workflow ids (one helper per
 * workflow, readable in the Temporal UI), and later the signals, updates and queries.
 */
/**
 * One retention workflow per deployment. A deployment is its task queue within the
 * namespace: two deployments sharing a namespace (staging and production, or parallel
 * test workers) must not adopt each other's sweeper, which would prune the other's database.
 */
export const outboxRetentionWorkflowId = (taskQueue: string) => `outbox-retention:${taskQueue}`;
/** The id retention had while it was one per namespace; a worker of its task queue ends it. */
export const LEGACY_OUTBOX_RETENTION_WORKFLOW_ID = 'outbox-retention';

export interface OutboxRetentionInput {
  retentionDays: number;
  intervalSeconds: number;
}

// ---------------------------------------------------------------------------------------
// Rollouts

export const rolloutWorkflowId = (rolloutId: string) => `rollout:${rolloutId}`;

export const ROLLOUT_STATES = ['pending', 'running', 'paused', 'completed', 'failed', 'aborted', 'rolling-back', 'rolled-back'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

export const ROLLOUT_OPERATIONS = ['start', 'pause', 'resume', 'abort', 'rollback'] as const;
export type RolloutOperation = (typeof ROLLOUT_OPERATIONS)[number];

/** Where each operation may start from, and where it leads (DESIGN.md, Rollout). */
export const ROLLOUT_TRANSITIONS: Record<RolloutOperation, { from: readonly RolloutState[]; to: RolloutState }> = {
  start: { from: ['pending'], to: 'running' },
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  abort: { from: ['pending', 'running', 'paused'], to: 'aborted' },
  rollback: { from: ['running', 'paused', 'completed', 'failed', 'aborted'], to: 'rolling-back' },
};

/** For messages: "A completed rollout cannot be paused." */
export const ROLLOUT_OPERATION_PAST: Record<RolloutOperation, string> = {
  start: 'started',
  pause: 'paused',
  resume: 'resumed',
  abort: 'aborted',
  rollback: 'rolled back',
};

/** States in which the workflow has nothing left to do (only a rollback starts it again). */
export const FINAL_ROLLOUT_STATES: readonly RolloutState[] = ['completed', 'failed', 'aborted', 'rolled-back'];

/** The outbox event type of entering each state. */
export const ROLLOUT_STATE_EVENTS: Record<RolloutState, string> = {
  pending: 'rollout.created',
  running: 'rollout.started',
  paused: 'rollout.paused',
  completed: 'rollout.completed',
  failed: 'rollout.failed',
  aborted: 'rollout.aborted',
  'rolling-back': 'rollout.rolling-back',
  'rolled-back': 'rollout.rolled-back',
};

export interface RolloutWorkflowInput {
  rolloutId: string;
  tenantId: string;
  /** Carried over continue-as-new: the bake still running (workflow time, ms). */
  bakeUntil?: number;
  /** Set by the create: this run may start before the rollout's row is committed. */
  created?: boolean;
}

export interface RolloutOperationRequest {
  operation: RolloutOperation;
  /** Row versions If-Match accepts; undefined: unconditional. */
  versions?: number[];
  /** Who asked (the principal's name), for the event. */
  actor: string;
}

export interface RolloutOperationResult {
  state: RolloutState;
  rowVersion: number;
}

/** Failure types an operation can end with (the API maps them to 409 and 412). */
export const ROLLOUT_FAILURES = { invalidTransition: 'invalid-state-transition', preconditionFailed: 'precondition-failed' } as const;

export interface RolloutStatus {
  state: RolloutState | 'loading';
  currentBatch: number;
  rowVersion: number;
  lastBatch?: BatchOutcome;
}

export interface BatchOutcome {
  batch: number;
  pushed: number;
  succeeded: number;
  failed: number;
  skipped: number;
}
