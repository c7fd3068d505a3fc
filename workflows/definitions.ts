/**
 * The contract between the api and the worker: every workflow's type name, id, input,
 * and its updates and queries. Both sides import these definitions (the api never names a
 * workflow, an update or a query by a string of its own), and `workflows/index.ts` checks
 * at compile time that each workflow it registers has the signature declared here.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type {
  FederatedRolloutOperation,
  Progress,
  RollbackProgress,
  RolloutOperation,
  RolloutState,
} from '../domain/rollouts';
import type { GitSyncTrigger } from '../domain/git/sync-trigger';

// ---------------------------------------------------------------------------------------
// Outbox retention

/**
 * One retention workflow per deployment. A deployment is its task queue within the
 * namespace: two deployments sharing a namespace (staging and production, or parallel
 * test workers) must not adopt each other's sweeper, which would prune the other's database.
 */
export const outboxRetentionWorkflowId = (taskQueue: string) => `outbox-retention:${taskQueue}`;

export interface OutboxRetentionInput {
  retentionDays: number;
  intervalSeconds: number;
}

export const outboxRetentionWorkflowType = 'outboxRetentionWorkflow';
export type OutboxRetentionWorkflow = (input: OutboxRetentionInput) => Promise<void>;

// ---------------------------------------------------------------------------------------
// Fleet census (the overview's agents online over time)

/** One census per deployment (its task queue), like outbox retention. */
export const fleetCensusWorkflowId = (taskQueue: string) => `fleet-census:${taskQueue}`;
export const fleetCensusWorkflowType = 'fleetCensusWorkflow';
export type FleetCensusWorkflow = (input: FleetCensusInput) => Promise<void>;

export interface FleetCensusInput {
  /** Days of counts kept (the API serves up to 7). */
  keepDays: number;
}

/** The census's last count (the Temporal UI's query). */
export interface FleetCensusStatus {
  countsThisRun: number;
  last: { tenants: number; pruned: number; at: string } | null;
}
export const fleetCensusStatusQuery = defineQuery<FleetCensusStatus>('fleetCensusStatusQuery');

// ---------------------------------------------------------------------------------------
// Rollouts

export const rolloutWorkflowId = (rolloutId: string) => `rollout:${rolloutId}`;

export const rolloutWorkflowType = 'rolloutWorkflow';
export type RolloutWorkflow = (input: RolloutWorkflowInput) => Promise<RolloutOutcome>;

export interface RolloutWorkflowInput {
  rolloutId: string;
  tenantId: string;
  /** Carried over continue-as-new: the bake still running (workflow time, ms). */
  bakeUntil?: number;
  /**
   * Continue as new after this many history events even when the server does not suggest
   * it yet (default 1,000). Tests set it low to reach continue-as-new in a short rollout.
   */
  historyLimit?: number;
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
export const ROLLOUT_FAILURES = {
  invalidTransition: 'invalid-state-transition',
  preconditionFailed: 'precondition-failed',
} as const;

/** The rollout's agents by state, and by rollback state once a rollback started. */
export interface RolloutCounts {
  progress: Progress;
  rollback: RollbackProgress | null;
}

export interface RolloutStatus {
  state: RolloutState | 'loading';
  currentBatch: number;
  rowVersion: number;
  /** Why it paused, failed, was aborted or rolled back. */
  reason?: string | null;
  /** As of the workflow's last step (a batch settled, a transition); the REST API counts live. */
  counts?: RolloutCounts;
  lastBatch?: BatchOutcome;
}

/**
 * What a run that ends returns: the rollout's final state, so the Temporal UI's result of a
 * "Completed" execution says whether the rollout completed, was aborted or rolled back.
 */
export interface RolloutOutcome {
  state: RolloutState;
  reason: string | null;
  /** One line, e.g. "aborted: aborted by alice; 2 succeeded, 0 failed, 8 skipped of 10". */
  outcome: string;
  counts?: RolloutCounts;
  lastBatch?: BatchOutcome;
}

export interface BatchOutcome {
  batch: number;
  pushed: number;
  succeeded: number;
  failed: number;
  skipped: number;
  /** Offline when pushed; they settle when they connect (absent from results recorded before deferral existed). */
  deferred?: number;
}

/** An operator's operation (start, pause, resume, abort, rollback), answered once the workflow has applied or refused it. */
export const operateRolloutUpdate = defineUpdate<RolloutOperationResult, [RolloutOperationRequest]>(
  'operateRolloutUpdate',
);
/** Where the workflow stands (state, batch, counts per state, last batch's outcome), from its memory. */
export const rolloutStatusQuery = defineQuery<RolloutStatus>('rolloutStatusQuery');

// ---------------------------------------------------------------------------------------
// Git sync

/** One long-running sync loop per Git source. */
export const gitSyncWorkflowId = (sourceId: string) => `git-sync:${sourceId}`;

export const gitSyncWorkflowType = 'gitSyncWorkflow';
export type GitSyncWorkflow = (input: GitSyncWorkflowInput) => Promise<void>;

export interface GitSyncWorkflowInput {
  sourceId: string;
  tenantId: string;
  /** Carried over continue-as-new: a wake-up received but not yet handled. */
  pending?: GitSyncWake[];
  /**
   * Carried over continue-as-new when the source did not change: when the next poll is due
   * (workflow time, ms). The new run reads the source but checks the tip only then (or when
   * woken), not at once as a first run does.
   */
  nextPollAt?: number;
  /**
   * Continue as new after this many history events even when the server does not suggest
   * it yet. Tests set it low to reach continue-as-new quickly.
   */
  historyLimit?: number;
}

/**
 * Why the api wakes a source's loop: a webhook delivery or a forced sweep (each checks the
 * tip of the branch at once), or a change to the source (its settings, paused, resumed or
 * deleted; the loop reads the source again and a deleted source ends it).
 */
export type GitSyncWake = { reason: 'webhook' | 'manual' } | { reason: 'source-changed' };

/** Wakes the loop (signal-with-start, so a source whose loop is not running gets one). */
export const gitSyncWakeSignal = defineSignal<[GitSyncWake]>('gitSyncWakeSignal');

/** Where a source's loop stands (the Temporal UI's query, and its current details). */
export interface GitSyncStatus {
  sourceId: string;
  /** The source's name and branch once loaded (absent in a run that has not read it). */
  name?: string;
  branch?: string;
  state: 'loading' | 'waiting' | 'syncing' | 'paused';
  /** When the poll is due next (ISO), while waiting. */
  nextPollAt: string | null;
  /** What woke the sync running now, or the last one. */
  lastTrigger: GitSyncTrigger | null;
  /** The last run the loop started (its id, `GET /api/git-sources/{id}/sync-runs`). */
  lastRunId: string | null;
  /** Wake-ups received and not handled yet. */
  pendingWakes: number;
}
export const gitSyncStatusQuery = defineQuery<GitSyncStatus>('gitSyncStatusQuery');

// ---------------------------------------------------------------------------------------
// Federation (docs/federation.md)

/** One peer health loop per deployment (its task queue), like outbox retention. */
export const peerHealthWorkflowId = (taskQueue: string) => `peer-health:${taskQueue}`;
export const peerHealthWorkflowType = 'peerHealthWorkflow';
export type PeerHealthWorkflow = (input: PeerHealthInput) => Promise<void>;

export interface PeerHealthInput {
  /** Every peer of every tenant is pinged this often (Federation:HealthCheckSeconds). */
  intervalSeconds: number;
}

/** The health loop's last sweep (the Temporal UI's query). */
export interface PeerHealthStatus {
  sweepsThisRun: number;
  intervalSeconds: number;
  /** The last sweep: peers pinged, how many answered healthy, how many flipped. */
  last: { pinged: number; healthy: number; changed: number; at: string } | null;
}
export const peerHealthStatusQuery = defineQuery<PeerHealthStatus>('peerHealthStatusQuery');

/** Hands agents to a peer: prepare the receiver, offer, wait for it to see them, settle. */
export const handoverWorkflowId = (handoverId: string) => `handover:${handoverId}`;
export const handoverWorkflowType = 'handoverWorkflow';
export type HandoverWorkflow = (input: HandoverWorkflowInput) => Promise<HandoverOutcome>;

export interface HandoverWorkflowInput {
  handoverId: string;
  tenantId: string;
}

/** The step a handover is at (the Temporal UI's query, and its current details). */
export interface HandoverStatus {
  step: 'loading' | 'preparing the receiver' | 'offering' | 'waiting for the receiver' | 'compensating' | 'settled';
  /** When the receiver must have the agents (ISO). */
  deadlineAt: string | null;
  outcome: HandoverOutcome | null;
}
export const handoverStatusQuery = defineQuery<HandoverStatus>('handoverStatusQuery');

/** The handover's final state, with how many agents moved (the Temporal UI's result). */
export interface HandoverOutcome {
  state: 'completed' | 'compensated' | 'failed';
  handedOver: number;
  withdrawn: number;
  /** Withdrawn, and not seen here since the offer: connected to neither installation (absent before it existed). */
  missing?: number;
  skipped: number;
  reason: string | null;
}

/** A configuration version rolled out across installations, one after another or all at once. */
export const federatedRolloutWorkflowId = (federatedRolloutId: string) => `federated-rollout:${federatedRolloutId}`;
export const federatedRolloutWorkflowType = 'federatedRolloutWorkflow';
export type FederatedRolloutWorkflow = (input: FederatedRolloutWorkflowInput) => Promise<FederatedRolloutOutcome>;

export interface FederatedRolloutWorkflowInput {
  federatedRolloutId: string;
  tenantId: string;
}

export type { FederatedRolloutOperation };

export interface FederatedRolloutOperationRequest {
  operation: FederatedRolloutOperation;
  /** Row versions If-Match accepts; undefined: unconditional. */
  versions?: number[];
  actor: string;
}

export interface FederatedRolloutOperationResult {
  state: string;
  rowVersion: number;
}

export interface FederatedRolloutOutcome {
  state: string;
  reason: string | null;
}

/** Where a federated rollout and each installation's part stand (the Temporal UI's query). */
export interface FederatedRolloutStatus {
  state: string;
  reason: string | null;
  mode: 'sequential' | 'parallel';
  parts: Array<{ position: number; name: string; started: boolean; ended: string | null }>;
}
export const federatedRolloutStatusQuery = defineQuery<FederatedRolloutStatus>('federatedRolloutStatusQuery');

/** Pause, resume, abort or roll back every installation's rollout (answered once applied or refused). */
export const operateFederatedRolloutUpdate = defineUpdate<
  FederatedRolloutOperationResult,
  [FederatedRolloutOperationRequest]
>('operateFederatedRolloutUpdate');
