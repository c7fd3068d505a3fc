/**
 * A rollout's life: the operations operators ask for, the states each may start from and
 * where it leads (DESIGN.md, Rollout), and the event each state is announced by. The
 * rollout workflow applies these rules; the api uses them to answer a plain refusal early.
 */
import type { EventType } from '../db/repos/events';
import type { RolloutState } from '../db/repos/rollouts';

export type { RolloutState } from '../db/repos/rollouts';

export const ROLLOUT_OPERATIONS = ['start', 'pause', 'resume', 'abort', 'rollback'] as const;
export type RolloutOperation = (typeof ROLLOUT_OPERATIONS)[number];

/** Where each operation may start from, and where it leads. */
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
export const ROLLOUT_STATE_EVENTS: Record<RolloutState, EventType> = {
  pending: 'rollout.created',
  running: 'rollout.started',
  paused: 'rollout.paused',
  completed: 'rollout.completed',
  failed: 'rollout.failed',
  aborted: 'rollout.aborted',
  'rolling-back': 'rollout.rolling-back',
  'rolled-back': 'rollout.rolled-back',
};

/** The refusal message of an operation the state does not allow. */
export const refusedOperation = (state: RolloutState, operation: RolloutOperation) =>
  `A ${state} rollout cannot be ${ROLLOUT_OPERATION_PAST[operation]}.`;
