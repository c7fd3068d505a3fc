/**
 * A rollout's life: the operations operators ask for, the states each may start from and
 * where it leads (docs/rollouts.md, States), and the event each state is announced by. The
 * rollout workflow applies these rules; the api uses them to answer a plain refusal early.
 */
import type { EventType } from '../db/repos/events';
import type { RolloutWindow } from './rollout-windows';

// ---------------------------------------------------------------------------------------
// The vocabulary: what a rollout is made of, the states it and its agents pass through, and
// how progress is counted. db/ stores these, workflows/ and api/ speak them.

/** The values of `rollouts.state`; the transitions between them are below. */
export const ROLLOUT_STATES = [
  'pending',
  'scheduled',
  'running',
  'paused',
  'completed',
  'failed',
  'aborted',
  'rolling-back',
  'rolled-back',
] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

export interface RolloutTarget {
  groupIds: string[];
  agentIds: string[];
  /** Every pair must match the agent's labels; null: no label selection. */
  labelSelector: Record<string, string> | null;
}

/**
 * What a batch does with an agent that is offline when it is pushed: `defer` it (its
 * desired configuration is recorded; it settles when it connects and reports), `skip` it, or
 * `fail` it once the apply timeout passes (what every rollout did before `offlineAgents`).
 */
export const OFFLINE_AGENT_MODES = ['defer', 'skip', 'fail'] as const;
export type OfflineAgentMode = (typeof OFFLINE_AGENT_MODES)[number];

/** How long a finished rollout keeps delivering to its deferred agents, by default: 7 days. */
export const DEFAULT_LATE_ARRIVAL_SECONDS = 7 * 86_400;
export const MAX_LATE_ARRIVAL_SECONDS = 30 * 86_400;

/** The longest one watch for late arrivals runs; the workflow starts another until the window closes. */
export const LATE_WATCH_MAX_MS = 12 * 3600_000;

/**
 * The health gate (strategy `healthGate`): during a batch's bake, an agent that applied the
 * version and then stays unhealthy for `unhealthyAfterSeconds`, or whose connection drops
 * more than `maxDisconnects` times, fails in the batch (docs/rollouts.md, Health after the change).
 */
export interface HealthGate {
  unhealthyAfterSeconds: number;
  maxDisconnects: number;
}

/** Drops of an agent's connection the gate forgives by default (an agent may restart to apply a configuration). */
export const DEFAULT_MAX_DISCONNECTS = 3;

export interface RolloutStrategy {
  batchSize?: number;
  batchPercent?: number;
  bakeSeconds: number;
  applyTimeoutSeconds: number;
  maxFailurePercent: number;
  onFailure: 'pause' | 'rollback';
  /** Absent on rollouts created before it existed: they fail offline agents, as they always did. */
  offlineAgents?: OfflineAgentMode;
  /** When batches may start (absent: any time). */
  windows?: RolloutWindow[];
  /** Absent likewise: 0, no delivery after the end. */
  lateArrivalSeconds?: number;
  /** Absent: the bake only waits. */
  healthGate?: HealthGate;
}

/**
 * Why a batch stops the rollout: more of the agents that answered failed than
 * `maxFailurePercent` allows. Undefined when the batch may go on.
 */
export function batchFailure(
  strategy: Pick<RolloutStrategy, 'maxFailurePercent'>,
  outcome: { batch: number; succeeded: number; failed: number },
): string | undefined {
  const { batch, failed } = outcome;
  const done = outcome.succeeded + failed;
  const failedPercent = done === 0 ? 0 : (failed * 100) / done;
  if (failed === 0 || failedPercent <= strategy.maxFailurePercent) return undefined;
  return `${failed} of ${done} agents of batch ${batch} failed (${failedPercent.toFixed(1)}% > maxFailurePercent ${strategy.maxFailurePercent})`;
}

/** OpAMP ComponentHealth as protobuf JSON (fields at their defaults are left out: `healthy: false` is absent). */
export interface ComponentHealthJson {
  healthy?: boolean;
  status?: string;
  lastError?: string;
  componentHealthMap?: Record<string, ComponentHealthJson>;
}

/**
 * What the gate says of an agent it fails: how it failed after applying, naming the
 * unhealthy component (the deepest one, by its path) and its message.
 */
export function healthVerdict(
  failure: { unhealthyForSeconds?: number; disconnects?: number },
  health: ComponentHealthJson | null,
): string {
  if (failure.unhealthyForSeconds === undefined)
    return `the agent's connection dropped ${failure.disconnects} times after it applied the version`;
  const component = unhealthyComponent(health ?? {}, []);
  const what = component ? `${component.path.join('/') || 'the agent'}: ${component.message}` : 'no detail reported';
  return `unhealthy for ${failure.unhealthyForSeconds} s after applying the version (${what})`;
}

function unhealthyComponent(
  health: ComponentHealthJson,
  path: string[],
): { path: string[]; message: string } | undefined {
  for (const [name, inner] of Object.entries(health.componentHealthMap ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    if (inner.healthy) continue;
    const deeper = unhealthyComponent(inner, [...path, name]);
    if (deeper) return deeper;
  }
  if (health.healthy) return undefined;
  return { path, message: health.lastError || health.status || 'unhealthy' };
}

/** The strategy's offline-agent rule and late-arrival window, as a stored rollout holds them or not. */
export function offlineRules(strategy: RolloutStrategy): { mode: OfflineAgentMode; lateArrivalSeconds: number } {
  return { mode: strategy.offlineAgents ?? 'fail', lateArrivalSeconds: strategy.lateArrivalSeconds ?? 0 };
}

/** An agent's part in a rollout, and in its rollback (`rollout_agents.state`, `rollback_state`). */
export const AGENT_ROLLOUT_STATES = ['pending', 'applying', 'deferred', 'succeeded', 'failed', 'skipped'] as const;
export type AgentRolloutState = (typeof AGENT_ROLLOUT_STATES)[number];
export type RollbackState = 'pending' | 'applying' | 'succeeded' | 'failed' | 'skipped';

/** Agents by state: the rollout's `progress`, overall and per batch. */
export interface Progress {
  total: number;
  pending: number;
  applying: number;
  /** Offline when their batch was pushed: they settle when they connect (strategy `offlineAgents: defer`). */
  deferred: number;
  succeeded: number;
  failed: number;
  skipped: number;
}

/**
 * What an agent's history records of it in a rollout (`agent_history.kind`): its push and
 * what came of it, or of the rollback's push.
 */
export const AGENT_HISTORY_KINDS = [
  'pushed',
  'deferred',
  'applied',
  'failed',
  'timed-out',
  'unhealthy',
  'denied',
  'abandoned',
  'skipped',
  'rollback-pushed',
  'rollback-applied',
  'rollback-failed',
  'rollback-skipped',
] as const;
export type AgentHistoryKind = (typeof AGENT_HISTORY_KINDS)[number];

/** The history kind of an agent's result, when nothing more particular (a timeout, a health verdict…) is known. */
export function resultKind(
  state: 'succeeded' | 'failed' | 'skipped' | 'deferred',
  rollback: boolean,
): AgentHistoryKind {
  if (state === 'deferred') return 'deferred';
  const kind = state === 'succeeded' ? 'applied' : state;
  return rollback ? `rollback-${kind}` : kind;
}

export interface BatchProgress extends Progress {
  batch: number;
}

export interface RollbackProgress {
  pending: number;
  applying: number;
  succeeded: number;
  failed: number;
  skipped: number;
}

// ---------------------------------------------------------------------------------------
// The operations and the states they lead to.

export const ROLLOUT_OPERATIONS = ['start', 'pause', 'resume', 'abort', 'rollback'] as const;
export type RolloutOperation = (typeof ROLLOUT_OPERATIONS)[number];

/**
 * Where each operation may start from, and where it leads. A start or resume before the
 * rollout's `startAt` leads to `scheduled` instead (`startedState`).
 */
export const ROLLOUT_TRANSITIONS: Record<RolloutOperation, { from: readonly RolloutState[]; to: RolloutState }> = {
  start: { from: ['pending'], to: 'running' },
  pause: { from: ['scheduled', 'running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  abort: { from: ['pending', 'scheduled', 'running', 'paused'], to: 'aborted' },
  rollback: { from: ['running', 'paused', 'completed', 'failed', 'aborted'], to: 'rolling-back' },
};

/**
 * Where a start or resume leads: `scheduled` while the rollout's `startAt` (ms) is ahead
 * and no batch was pushed yet, else `running`.
 */
export function startedState(startAt: number | null | undefined, currentBatch: number, now: number): RolloutState {
  return startAt != null && startAt > now && currentBatch === 0 ? 'scheduled' : 'running';
}

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
  scheduled: 'rollout.scheduled',
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

/** Why an agent of the batch in flight that had not reported fails when the rollout is aborted. */
export const ABANDONED_BY_ABORT = 'the rollout was aborted before the agent reported';

/**
 * Why a deferred agent (offline when pushed) is `skipped` and no longer gets the version:
 * the rollout ended another way than completed, or completed and its late-arrival window
 * passed (`late`).
 */
export const NEVER_CAME_ONLINE = {
  failed: 'the rollout failed before the agent came online',
  aborted: 'the rollout was aborted before the agent came online',
  'rolling-back': 'the rollout was rolled back before the agent came online',
  late: 'the agent was offline for the whole rollout and its late-arrival window',
} as const;

/** What a rollback records of a deferred agent: it never got the version, and its previous one is desired again. */
export const ROLLBACK_OF_DEFERRED =
  "the agent never got this rollout's version; its previous configuration is desired again";

// ---------------------------------------------------------------------------------------
// Federated rollouts (docs/federation.md): one rollout per installation, operated together.

/** The values of `federated_rollouts.state`; the transitions are below. */
export const FEDERATED_ROLLOUT_STATES = [
  'running',
  'paused',
  'completed',
  'failed',
  'aborted',
  'rolling-back',
  'rolled-back',
] as const;
export type FederatedRolloutState = (typeof FEDERATED_ROLLOUT_STATES)[number];

/**
 * One installation's part: its rollout's state there, or `pending` (not created yet),
 * `denied` (a policy there refused it), `unreachable` (the peer stopped answering).
 */
export const INSTALLATION_STATES = [...ROLLOUT_STATES, 'denied', 'unreachable'] as const;
export type InstallationState = (typeof INSTALLATION_STATES)[number];

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
