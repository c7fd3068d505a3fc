/**
 * A rollout's life: the operations operators ask for, the states each may start from and
 * where it leads (docs/rollouts.md, States), and the event each state is announced by. The
 * rollout workflow applies these rules; the api uses them to answer a plain refusal early.
 */
import type { EventType } from '../db/repos/events';
import type { FederatedRolloutState } from '../db/repos/federated-rollouts';
import type { RolloutRow, RolloutState } from '../db/repos/rollouts';

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

/**
 * Why an agent the rollout never pushed to is `skipped` when the rollout ends in a final
 * state: none is left `pending` for ever.
 */
export const NEVER_PUSHED: Partial<Record<RolloutState, string>> = {
  completed: 'the rollout completed before the agent was pushed',
  failed: 'the rollout failed before the agent was pushed',
  aborted: 'the rollout was aborted before the agent was pushed',
  'rolled-back': 'the rollout was rolled back before the agent was pushed',
};

type Described = Pick<
  RolloutRow,
  'id' | 'name' | 'description' | 'version' | 'target' | 'strategy' | 'created_by' | 'configuration_id'
>;

/** "2 groups, 3 agents, labels env=prod": what a target names, in a few words. */
export function describeTarget(target: RolloutRow['target']): string {
  const parts = [];
  const count = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  if (target.groupIds.length) parts.push(count(target.groupIds.length, 'group'));
  if (target.agentIds.length) parts.push(count(target.agentIds.length, 'agent'));
  if (target.labelSelector)
    parts.push(
      `labels ${Object.entries(target.labelSelector)
        .map(([key, value]) => `${key}=${value}`)
        .join(',')}`,
    );
  return parts.join(', ');
}

/** "batches of 10 %, bake 60 s, apply timeout 300 s, max failures 0 %, on failure pause" */
export function describeStrategy(strategy: RolloutRow['strategy']): string {
  const batches =
    strategy.batchSize !== undefined ? `batches of ${strategy.batchSize}` : `batches of ${strategy.batchPercent} %`;
  return `${batches}, bake ${strategy.bakeSeconds} s, apply timeout ${strategy.applyTimeoutSeconds} s, max failures ${strategy.maxFailurePercent} %, on failure ${strategy.onFailure}`;
}

/** The Temporal UI shows about a line of summary; longer names are cut there (in full in the details). */
const SUMMARY_CHARS = 200;

/**
 * How a rollout reads where operators meet its workflow (the Temporal UI's summary and
 * details): its name, the configuration and version, the target and the strategy, instead
 * of a bare id.
 */
export function describeRollout(rollout: Described, configurationName: string): { summary: string; details: string } {
  const what = `${configurationName} v${rollout.version} → ${describeTarget(rollout.target)}`;
  const full = rollout.name ? `${rollout.name}: ${what}` : `Rollout of ${what}`;
  const summary = full.length > SUMMARY_CHARS ? `${full.slice(0, SUMMARY_CHARS - 1)}…` : full;
  const target = rollout.target;
  const details = [
    `**${rollout.name ?? 'Rollout'}** (${rollout.id}, created by ${rollout.created_by})`,
    ...(rollout.description ? ['', rollout.description, ''] : []),
    `- Configuration: ${configurationName} (${rollout.configuration_id}), version ${rollout.version}`,
    `- Target: ${describeTarget(target)}`,
    ...(target.groupIds.length ? [`  - groups: ${target.groupIds.join(', ')}`] : []),
    ...(target.agentIds.length && target.agentIds.length <= 20 ? [`  - agents: ${target.agentIds.join(', ')}`] : []),
    `- Strategy: ${describeStrategy(rollout.strategy)}`,
    `- REST: GET /api/rollouts/${rollout.id} (live progress), /api/rollouts/${rollout.id}/agents`,
  ].join('\n');
  return { summary, details };
}

// ---------------------------------------------------------------------------------------
// Federated rollouts (docs/federation.md): one rollout per installation, operated together.

export type { FederatedRolloutState } from '../db/repos/federated-rollouts';
export const FEDERATED_ROLLOUT_OPERATIONS = ['pause', 'resume', 'abort', 'rollback'] as const;
export type FederatedRolloutOperation = (typeof FEDERATED_ROLLOUT_OPERATIONS)[number];

/** Where each operation on a federated rollout may start from, and where it leads. */
export const FEDERATED_TRANSITIONS: Record<
  FederatedRolloutOperation,
  { from: readonly FederatedRolloutState[]; to: FederatedRolloutState }
> = {
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  abort: { from: ['running', 'paused'], to: 'aborted' },
  rollback: { from: ['running', 'paused', 'completed', 'failed', 'aborted'], to: 'rolling-back' },
};

export const FINAL_FEDERATED_STATES: readonly FederatedRolloutState[] = [
  'completed',
  'failed',
  'aborted',
  'rolled-back',
];

/** The outbox event of a federated rollout entering each state. */
export const FEDERATED_STATE_EVENTS: Record<FederatedRolloutState, EventType> = {
  running: 'federation.rollout.resumed',
  paused: 'federation.rollout.paused',
  completed: 'federation.rollout.completed',
  failed: 'federation.rollout.failed',
  aborted: 'federation.rollout.aborted',
  'rolling-back': 'federation.rollout.rolling-back',
  'rolled-back': 'federation.rollout.rolled-back',
};

export const refusedFederatedOperation = (state: FederatedRolloutState, operation: FederatedRolloutOperation) =>
  `A ${state} federated rollout cannot be ${ROLLOUT_OPERATION_PAST[operation]}.`;
