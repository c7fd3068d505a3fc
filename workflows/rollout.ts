/**
 * One workflow per rollout (`rollout:<id>`). It owns the rollout's state: operators'
 * operations arrive as Updates and every transition is a conditional write by the
 * `transitionRollout` activity, so the API's answer is the transition the workflow
 * accepted. Per-agent work lives in activities and the database; the history holds a few
 * events per batch, and the workflow continues as new before it grows long.
 *
 * The workflow reads its state from the database when it starts, so any run can pick up:
 * a rollback of a finished rollout starts a new run (update-with-start), and a
 * continued-as-new run goes on with the next batch.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  isCancellation,
  condition,
  continueAsNew,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FINAL_ROLLOUT_STATES, ROLLOUT_TRANSITIONS, refusedOperation, type RolloutState } from '../domain/rollouts';
import {
  ROLLOUT_FAILURES,
  operateRolloutUpdate,
  rolloutStatusQuery,
  type BatchOutcome,
  type RolloutCounts,
  type RolloutOperationRequest,
  type RolloutOutcome,
  type RolloutWorkflowInput,
} from './definitions';
import { oneAtATime } from './one-at-a-time';
import { currentDetails, outcomeLine } from './rollout-details';
import { rolloutStateKey } from './search-attributes';

const quick = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Waiting activities heartbeat; a worker that dies is noticed within the heartbeat timeout. */
const waiting = proxyActivities<Activities>({
  startToCloseTimeout: '2 days',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Continue as new after this many events even when the server does not suggest it yet. */
const HISTORY_LIMIT = 1000;

export async function rolloutWorkflow(input: RolloutWorkflowInput): Promise<RolloutOutcome> {
  let state: RolloutState | 'loading' = 'loading';
  let rowVersion = 0;
  let currentBatch = 0;
  let lastBatch: BatchOutcome | undefined;
  let reason: string | null | undefined;
  let counts: RolloutCounts | undefined;
  /** The rollout in one line (absent from activity results recorded by an older worker). */
  let summary: string | undefined = undefined;
  /** Workflow time until which the last batch bakes (an absolute deadline, also across a pause). */
  let bakeUntil = input.bakeUntil ?? 0;
  /** The wait for the batch in flight; an abort or a rollback cancels it. */
  let batchWait: CancellationScope | undefined;

  setHandler(rolloutStatusQuery, () => ({ state, currentBatch, rowVersion, reason, counts, lastBatch }));
  /** The Temporal UI's view of the rollout now (metadata, not a command: replay is unaffected). */
  const showDetails = () =>
    setCurrentDetails(currentDetails({ summary, state, currentBatch, reason, counts, lastBatch }));
  /** The state now (handlers change it while the main loop awaits; TypeScript's narrowing cannot know). */
  const stateNow = (): RolloutState | 'loading' => state;

  /** One transition at a time: the main loop and operators' updates never interleave. */
  const transitions = oneAtATime(() => state !== 'loading');
  const exclusively = transitions.run;

  async function transition(
    to: RolloutState,
    options: { from: RolloutState[]; versions?: number[]; reason?: string | null; actor?: string },
  ) {
    const result = await quick.transitionRollout({ rolloutId: input.rolloutId, to, ...options });
    if (result.ok) {
      state = result.state;
      rowVersion = result.rowVersion;
      if (options.reason !== undefined) reason = options.reason;
      counts = result.counts ?? counts;
      showDetails();
      upsertSearchAttributes([{ key: rolloutStateKey, value: state }]);
      if (state === 'aborted' || state === 'rolling-back') batchWait?.cancel();
    } else if (result.state) {
      state = result.state;
      rowVersion = result.rowVersion ?? rowVersion;
    }
    return result;
  }

  /** The workflow's own transitions: only from where it believes the rollout is. */
  const move = (to: RolloutState, from: RolloutState[], reason?: string) =>
    exclusively(() =>
      from.includes(state as RolloutState) ? transition(to, { from, reason }) : Promise.resolve(undefined),
    );

  setHandler(
    operateRolloutUpdate,
    (request) =>
      exclusively(async () => {
        const rule = ROLLOUT_TRANSITIONS[request.operation];
        const current = state as RolloutState;
        if (!rule.from.includes(current)) {
          throw ApplicationFailure.nonRetryable(
            refusedOperation(current, request.operation),
            ROLLOUT_FAILURES.invalidTransition,
            { state: current },
          );
        }
        const reason =
          request.operation === 'rollback'
            ? `rolled back by ${request.actor}`
            : request.operation === 'abort'
              ? `aborted by ${request.actor}`
              : null;
        const result = await transition(rule.to, {
          from: [current],
          versions: request.versions,
          reason,
          actor: request.actor,
        });
        if (!result.ok) {
          const type =
            result.why === 'precondition' ? ROLLOUT_FAILURES.preconditionFailed : ROLLOUT_FAILURES.invalidTransition;
          throw ApplicationFailure.nonRetryable(
            `The rollout is ${state}; the ${request.operation} was not applied.`,
            type,
            { state },
          );
        }
        return { state: result.state, rowVersion: result.rowVersion };
      }),
    {
      // Refused before it enters history: an operation that does not exist.
      // The payload comes off the wire: typed as the contract says, checked as if it were not.
      validator: (request: RolloutOperationRequest | undefined) => {
        if (!request || !Object.hasOwn(ROLLOUT_TRANSITIONS, request.operation))
          throw new Error(`unknown operation ${String(request?.operation)}`);
      },
    },
  );

  // The api starts the workflow once the rollout's row is committed.
  const loaded = await quick.loadRollout(input.rolloutId);
  state = loaded.state;
  rowVersion = loaded.rowVersion;
  currentBatch = loaded.currentBatch;
  reason = loaded.reason;
  counts = loaded.counts;
  summary = loaded.summary;
  showDetails();
  const strategy = loaded.strategy;
  /** A run that starts mid-rollout first finishes the batch it finds (push and wait are idempotent). */
  let unfinishedBatch = currentBatch > 0;

  for (;;) {
    switch (state) {
      case 'pending':
      case 'paused':
        await condition(() => state !== 'pending' && state !== 'paused');
        break;
      case 'running':
        try {
          await runNextBatch();
        } catch (error) {
          // An activity that cannot succeed by retrying (e.g. the version is no longer
          // pushable): the rollout fails with the reason rather than retrying for ever.
          if (!(
            error instanceof ActivityFailure &&
            error.cause instanceof ApplicationFailure &&
            error.cause.nonRetryable
          ))
            throw error;
          await move('failed', ['running'], error.cause.message);
        }
        break;
      case 'rolling-back':
        await waiting.startRollback({ rolloutId: input.rolloutId });
        await waiting.awaitRollback({ rolloutId: input.rolloutId });
        await move('rolled-back', ['rolling-back']);
        break;
      default:
        // A final state: let an operation that is still running (e.g. a rollback that
        // arrived with this run's start) finish, then end unless it moved us on.
        await condition(allHandlersFinished);
        if (FINAL_ROLLOUT_STATES.includes(state)) {
          const final = { state, reason: reason ?? null, counts, lastBatch };
          return { ...final, outcome: outcomeLine(final) };
        }
    }
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (input.historyLimit ?? HISTORY_LIMIT)) {
      await condition(() => allHandlersFinished() && !transitions.busy());
      await continueAsNew<typeof rolloutWorkflow>({
        rolloutId: input.rolloutId,
        tenantId: input.tenantId,
        bakeUntil,
        historyLimit: input.historyLimit,
      });
    }
  }

  async function runNextBatch() {
    if (unfinishedBatch) {
      unfinishedBatch = false;
      await pushAndAwait(currentBatch, { resumed: true });
      return;
    }
    if (bakeUntil > Date.now()) {
      await condition(() => state !== 'running', bakeUntil - Date.now());
      if (state !== 'running') return;
    }
    bakeUntil = 0;
    const batch = currentBatch + 1;
    const prepared = await quick.prepareBatch({ rolloutId: input.rolloutId, batch });
    if (!prepared.running) return; // an operator moved it meanwhile; the loop follows the new state
    if (prepared.agents === 0) {
      // No agent left: there is no batch `batch`, and the rollout is done.
      await move('completed', ['running']);
      return;
    }
    currentBatch = batch;
    showDetails();
    await pushAndAwait(batch);
  }

  async function pushAndAwait(batch: number, options: { resumed?: boolean } = {}) {
    const { pushed } = await waiting.pushBatch({ rolloutId: input.rolloutId, batch });
    if (stateNow() !== 'running') return;
    let outcome;
    try {
      batchWait = new CancellationScope();
      outcome = await batchWait.run(() => waiting.awaitBatch({ rolloutId: input.rolloutId, batch }));
    } catch (error) {
      if (!isCancellation(error)) throw error;
      // Aborted: the agents that have not answered are given up. Rolling back: they are rolled back.
      if (stateNow() === 'aborted')
        await quick.abandonBatch({
          rolloutId: input.rolloutId,
          batch,
          reason: 'the rollout was aborted before the agent reported',
        });
      return;
    } finally {
      batchWait = undefined;
    }
    lastBatch = {
      batch,
      pushed: outcome.pushed,
      succeeded: outcome.succeeded,
      failed: outcome.failed,
      skipped: outcome.skipped,
    };
    counts = outcome.counts ?? counts;
    showDetails();
    // A batch a previous run had already judged is not judged again (a resume would re-pause).
    if (options.resumed && pushed === 0 && outcome.awaited === 0) return;
    const { failed } = outcome;
    const done = outcome.succeeded + outcome.failed;
    const failedPercent = done === 0 ? 0 : (failed * 100) / done;
    if (failed > 0 && failedPercent > strategy.maxFailurePercent) {
      const reason = `${failed} of ${done} agents of batch ${batch} failed (${failedPercent.toFixed(1)}% > maxFailurePercent ${strategy.maxFailurePercent})`;
      // Only a rollout still running reacts: an operator may have paused or aborted it meanwhile.
      await move(strategy.onFailure === 'rollback' ? 'rolling-back' : 'paused', ['running'], reason);
      return;
    }
    bakeUntil = Date.now() + strategy.bakeSeconds * 1000;
  }
}
