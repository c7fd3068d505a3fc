/**
 * What the Temporal UI shows of a rollout while it runs and once it ends: the workflow's
 * current details (markdown, read by the UI through the workflow's metadata query) and the
 * one-line outcome its result carries. Pure text from the workflow's memory.
 */
import type { RolloutState } from '../domain/rollouts';
import type { BatchOutcome, RolloutCounts } from './definitions';

export interface RolloutView {
  summary?: string;
  state: RolloutState | 'loading';
  currentBatch: number;
  reason?: string | null;
  counts?: RolloutCounts;
  lastBatch?: BatchOutcome;
  /** Scheduled: not before then (ms) is the first batch pushed. */
  startAt?: number | null;
  /** Outside the strategy's windows: when the next opens (ms). */
  waitingForWindow?: number;
}

/** "3 succeeded, 1 failed, 6 skipped of 10 agents" (the states that have any, besides total). */
function agentCounts(counts: RolloutCounts): string {
  const { total, ...byState } = counts.progress;
  const states = Object.entries(byState).filter(([, n]) => n > 0);
  return `${states.map(([state, n]) => `${n} ${state}`).join(', ') || 'none'} of ${total} agents`;
}

function rollbackCounts(rollback: NonNullable<RolloutCounts['rollback']>): string {
  return Object.entries(rollback)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
}

/** "aborted (aborted by alice): 2 succeeded, 8 skipped of 10 agents" */
export function outcomeLine(view: Pick<RolloutView, 'state' | 'reason' | 'counts'>): string {
  const why = view.reason ? ` (${view.reason})` : '';
  return `${view.state}${why}${view.counts ? `: ${agentCounts(view.counts)}` : ''}`;
}

export function currentDetails(view: RolloutView): string {
  const lines = [];
  if (view.summary) lines.push(view.summary, '');
  lines.push(`**${view.state}**${view.currentBatch > 0 ? ` · batch ${view.currentBatch}` : ''}`);
  if (view.state === 'scheduled' && view.startAt)
    lines.push(`- First batch at ${new Date(view.startAt).toISOString()}`);
  if (view.waitingForWindow)
    lines.push(`- Next batch when a window opens: ${new Date(view.waitingForWindow).toISOString()}`);
  if (view.reason) lines.push(`- Reason: ${view.reason}`);
  if (view.counts) lines.push(`- Agents: ${agentCounts(view.counts)}`);
  if (view.counts?.rollback) lines.push(`- Rollback: ${rollbackCounts(view.counts.rollback)}`);
  const last = view.lastBatch;
  if (last)
    lines.push(
      `- Last batch ${last.batch}: ${last.pushed} pushed, ${last.succeeded} succeeded, ${last.failed} failed, ${last.skipped} skipped${last.deferred ? `, ${last.deferred} deferred` : ''}`,
    );
  return lines.join('\n');
}
