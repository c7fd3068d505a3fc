/**
 * A rollout as the service shows it: the rollouts API's bodies and the `rollout.created`
 * event's data, one shape whoever created the rollout (an operator, a Git template, a
 * federation peer). api/routes/rollouts/schema.ts types these against its response schemas.
 */
import type { Db } from '../db/connection';
import { rolloutProgress } from '../db/repos/rollout-agents';
import type { RolloutRow } from '../db/repos/rollouts';
import {
  offlineRules,
  type BatchProgress,
  type OfflineAgentMode,
  type Progress,
  type RollbackProgress,
  type RolloutState,
  type RolloutStrategy,
  type RolloutTarget,
} from './rollouts';
import { nextWindowOpening } from './rollout-windows';

/** The strategy's offline-agent fields as the rollout runs by them. */
function effectiveOfflineRules(strategy: RolloutStrategy) {
  const { mode, lateArrivalSeconds } = offlineRules(strategy);
  return { offlineAgents: mode, lateArrivalSeconds };
}

export interface RolloutSummaryView {
  id: string;
  name: string | null;
  description: string | null;
  configurationId: string;
  version: number;
  contentHash: string;
  target: RolloutTarget;
  /** With the offline-agent rule and late-arrival window it runs by (a rollout from before them: `fail`, 0). */
  strategy: RolloutStrategy & { offlineAgents: OfflineAgentMode; lateArrivalSeconds: number };
  state: RolloutState;
  reason: string | null;
  currentBatch: number;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Not before then is the first batch pushed. */
  startAt: string | null;
  /** A running rollout outside its windows: when the next opens. */
  nextWindowAt: string | null;
}

export interface RolloutView extends RolloutSummaryView {
  progress: Progress;
  batches: BatchProgress[];
  rollback: RollbackProgress | null;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The rollout without its agents' counts (the rollouts list). */
export function rolloutSummaryView(row: RolloutRow): RolloutSummaryView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    configurationId: row.configuration_id,
    version: row.version,
    contentHash: row.content_hash,
    target: row.target,
    strategy: { ...row.strategy, ...effectiveOfflineRules(row.strategy) },
    state: row.state,
    reason: row.reason,
    currentBatch: row.current_batch,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    startAt: iso(row.start_at),
    nextWindowAt: nextWindowAt(row),
  };
}

/** When a running rollout outside its windows may start its next batch; null inside one, or without windows. */
function nextWindowAt(row: RolloutRow): string | null {
  const windows = row.strategy.windows;
  if (row.state !== 'running' || !windows?.length) return null;
  const now = Date.now();
  const opens = nextWindowOpening(windows, now);
  return opens > now ? new Date(opens).toISOString() : null;
}

/** The rollout with its agents' counts, overall, per batch and of its rollback, as they stand in `db`. */
export async function rolloutView(db: Db, row: RolloutRow): Promise<RolloutView> {
  const counts = await rolloutProgress(db, row.id);
  return { ...rolloutSummaryView(row), progress: counts.progress, batches: counts.batches, rollback: counts.rollback };
}
