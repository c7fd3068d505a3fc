/**
 * One long-running loop per Git source (`git-sync:<id>`). It wakes on the poll timer (which
 * runs at the source's interval whether webhooks arrive or not: the spec's backstop), on a
 * webhook or forced sweep, and on a change to the source; each wake-up reads the branch's
 * tip, and a run happens only when the tip moved (a forced sweep always runs). Wakes that
 * arrive during a sweep are handled together after it, reading the tip again, so a burst of
 * webhooks for one push makes one run. The source is read from the database at every change,
 * so a paused source waits, and a deleted one ends its loop.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  patched,
  ParentClosePolicy,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { GitSourceState } from '../activities/git-sync';
import type { TemplateRollout } from '../activities/git/rollouts';
import {
  gitSyncStatusQuery,
  gitSyncWakeSignal,
  type GitSyncStatus,
  rolloutWorkflowId,
  rolloutWorkflowType,
  type GitSyncWake,
  type GitSyncWorkflowInput,
  type RolloutWorkflow,
} from './definitions';
import { configurationIdKey, rolloutIdKey, rolloutStateKey, tenantIdKey } from './search-attributes';
import type { GitSyncTrigger } from '../domain/git/sync-trigger';

const retry = { initialInterval: '1 second', maximumInterval: '30 seconds' } as const;

const quick = proxyActivities<Activities>({ startToCloseTimeout: '2 minutes', retry });

/** A sweep fetches and applies up to 1,000 files; it heartbeats, so a dead worker is noticed quickly. */
const sweeping = proxyActivities<Activities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '30 seconds',
  retry,
});

/** Patch: a loop that ends because its source was deleted removes the source's working copy. */
const REMOVE_WORKING_COPY = 'remove-working-copy';

/** Continue as new after this many events even when the server does not suggest it yet. */
const HISTORY_LIMIT = 1000;

export async function gitSyncWorkflow(input: GitSyncWorkflowInput): Promise<void> {
  /** Webhooks and forced sweeps not yet handled. */
  const wakes: Array<'webhook' | 'manual'> = [];
  /** The source changed (or this run just started): read it again, then check the tip. */
  let changed = true;
  /** A run continued as new checks the tip when its poll is due, not at once (unless the source changed). */
  let carriedPollAt = input.nextPollAt;
  const take = (wake: GitSyncWake) => {
    if (wake.reason === 'source-changed') [changed, carriedPollAt] = [true, undefined];
    else wakes.push(wake.reason);
  };
  for (const wake of input.pending ?? []) take(wake);
  setHandler(gitSyncWakeSignal, take);

  let source: GitSourceState | null = null;
  let nextPollAt = 0;
  let due = false;
  const status: GitSyncStatus = {
    sourceId: input.sourceId,
    state: 'loading',
    nextPollAt: null,
    lastTrigger: null,
    lastRunId: null,
    pendingWakes: 0,
  };
  const show = (state: GitSyncStatus['state']) => {
    Object.assign(status, {
      state,
      name: source?.name,
      branch: source?.branch,
      nextPollAt: state === 'waiting' ? new Date(nextPollAt).toISOString() : null,
    });
    setCurrentDetails(gitSyncDetails(status));
  };
  setHandler(gitSyncStatusQuery, () => ({ ...status, pendingWakes: wakes.length }));
  for (;;) {
    if (changed) {
      changed = false;
      source = await quick.loadGitSource(input.sourceId);
      if (!source) {
        // Deleted: its working copy goes with it (other workers' copies go at their next tidy).
        if (patched(REMOVE_WORKING_COPY)) await quick.removeWorkingCopy(input.sourceId);
        return;
      }
      nextPollAt = carriedPollAt ?? Date.now() + source.pollIntervalSeconds * 1000;
      due = carriedPollAt === undefined || carriedPollAt <= Date.now();
      carriedPollAt = undefined;
    }
    if (source!.paused) {
      wakes.length = 0; // a paused source does not react to webhooks
    } else if (due || wakes.length > 0) {
      const taken = wakes.splice(0);
      due = false;
      status.lastTrigger = taken.includes('manual') ? 'manual' : taken.includes('webhook') ? 'webhook' : 'poll';
      show('syncing');
      await sync(status.lastTrigger);
    }
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (input.historyLimit ?? HISTORY_LIMIT)) {
      await condition(allHandlersFinished);
      const pending: GitSyncWake[] = wakes.map((reason) => ({ reason }));
      if (changed) pending.push({ reason: 'source-changed' });
      await continueAsNew<typeof gitSyncWorkflow>({ ...input, pending, nextPollAt: changed ? undefined : nextPollAt });
    }
    show(source!.paused ? 'paused' : 'waiting');
    if (source!.paused) {
      await condition(() => changed);
    } else if (!(await condition(() => changed || wakes.length > 0, Math.max(1, nextPollAt - Date.now())))) {
      due = true;
      nextPollAt = Date.now() + source!.pollIntervalSeconds * 1000;
    }
  }

  async function sync(trigger: GitSyncTrigger) {
    try {
      const run = await quick.checkTip({ sourceId: input.sourceId, trigger, force: trigger === 'manual' });
      if (!run) return;
      status.lastRunId = run.runId;
      const { rollouts } = await sweeping.sweep({ runId: run.runId });
      for (const rollout of rollouts) await startRollout(rollout);
    } catch (error) {
      // Retries are unlimited, so only a failure that retrying cannot change gets here: the
      // loop outlives it (the next wake-up tries again) rather than ending the source's syncing.
      if (!(error instanceof ActivityFailure)) throw error;
      log.warn('git sync step failed for good', { sourceId: input.sourceId, error: error.message });
    }
  }
}

/** The Temporal UI's current details of a source's loop. */
function gitSyncDetails(status: GitSyncStatus): string {
  const lines = [
    `Git sync of ${status.name ? `'${status.name}' (${status.branch})` : `source ${status.sourceId}`}`,
    '',
    `**${status.state}**${status.nextPollAt ? ` · next poll at ${status.nextPollAt}` : ''}`,
  ];
  if (status.lastTrigger) lines.push(`- Last woken by: ${status.lastTrigger}`);
  if (status.lastRunId)
    lines.push(`- Last run: ${status.lastRunId} (GET /api/git-sources/${status.sourceId}/sync-runs)`);
  return lines.join('\n');
}

/**
 * Starts the workflow of a rollout the sweep created and moved to running. A child, so the
 * start is a step of this history (a worker that dies in between resumes it, and no client
 * is needed on the worker); abandoned, so it outlives this run's continue-as-new.
 */
async function startRollout(rollout: TemplateRollout) {
  await startChild<RolloutWorkflow>(rolloutWorkflowType, {
    workflowId: rolloutWorkflowId(rollout.rolloutId),
    args: [{ rolloutId: rollout.rolloutId, tenantId: rollout.tenantId }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: [
      { key: tenantIdKey, value: rollout.tenantId },
      { key: rolloutIdKey, value: rollout.rolloutId },
      { key: configurationIdKey, value: rollout.configurationId },
      { key: rolloutStateKey, value: 'running' },
    ],
  });
}
