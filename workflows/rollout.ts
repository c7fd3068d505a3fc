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
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  isCancellation,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  ABANDONED_BY_ABORT,
  FINAL_ROLLOUT_STATES,
  LATE_WATCH_MAX_MS,
  batchFailure,
  offlineRules,
  startedState,
  ROLLOUT_TRANSITIONS,
  refusedOperation,
  type RolloutState,
  type RolloutStrategy,
} from '../domain/rollouts';
import {
  ROLLOUT_FAILURES,
  operateRolloutUpdate,
  rolloutStatusQuery,
  type BatchOutcome,
  type RolloutOperationRequest,
  type RolloutOperationResult,
  type RolloutOutcome,
  type RolloutStatus,
  type RolloutWorkflowInput,
} from './definitions';
import { oneAtATime } from './one-at-a-time';
import { currentDetails, outcomeLine, type RolloutView } from './rollout-details';
import { rolloutStateKey } from './search-attributes';
import { nextWindowOpening, type RolloutWindow } from '../domain/rollout-windows';

const quick = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Waiting activities heartbeat; a worker that dies is noticed within the heartbeat timeout. */
const WAITING = {
  startToCloseTimeout: '2 days',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
} as const;
const waiting = proxyActivities<Activities>(WAITING);

/**
 * The same, for waits the workflow cancels (a batch's, a health watch, late arrivals): a
 * cancelled wait ends when the activity has stopped, so a run never closes with it pending.
 */
const cancellableWait = proxyActivities<Activities>({
  ...WAITING,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

/** The patch that made cancelled waits end with their activity: older histories replay without it. */
const WAIT_FOR_CANCELLED = 'wait-for-cancelled-activities';

/** The proxy a cancellable wait goes through (the older one in histories from before the patch). */
const waitsFor = () => (patched(WAIT_FOR_CANCELLED) ? cancellableWait : waiting);

/** The patch that added late arrivals (deferred agents settling after completion): older histories replay without it. */
const LATE_ARRIVALS = 'late-arrivals';

/** The patch that made the workflow hold the late-arrival window (a timer it can skip in tests, not the activity's clock). */
const LATE_WINDOW = 'late-window-in-workflow';

/** The patch that settles deferred agents while the rollout is paused: older histories replay without it. */
const SETTLE_WHILE_PAUSED = 'settle-deferred-while-paused';

/** Continue as new after this many events even when the server does not suggest it yet. */
const HISTORY_LIMIT = 1000;

/** What one run knows of its rollout, shared by the main loop, the update handler and the query. */
interface RolloutRun extends RolloutView {
  input: RolloutWorkflowInput;
  rowVersion: number;
  /** The rollout in one line (absent from activity results recorded by an older worker). */
  summary?: string;
  /** Workflow time until which the last batch bakes (an absolute deadline, also across a pause). */
  bakeUntil: number;
  /** The wait for the batch in flight; an abort or a rollback cancels it. */
  batchWait?: CancellationScope;
  /** The wait for deferred agents (completed, or paused); leaving the state it started in cancels it. */
  lateWait?: { scope: CancellationScope; state: RolloutState };
  /** Not before then (ms) is the first batch pushed. */
  startAt: number | null;
  /** When it reached a final state (ms, the database's time when loaded, else this run's). */
  finishedAt: number | null;
  /** Outside the strategy's windows: when the next opens (ms), for the details. */
  waitingForWindow?: number;
  /** The health gate's watch of a baking batch; leaving `running` (a pause too) cancels it. */
  bakeWatch?: CancellationScope;
  /** One transition at a time: the main loop and operators' updates never interleave. */
  transitions: ReturnType<typeof oneAtATime>;
  /** A run that starts mid-rollout first finishes the batch it finds (push and wait are idempotent). */
  unfinishedBatch: boolean;
}

export async function rolloutWorkflow(input: RolloutWorkflowInput): Promise<RolloutOutcome> {
  const run = newRun(input);
  setHandler(rolloutStatusQuery, () => statusOf(run));
  setHandler(operateRolloutUpdate, (request) => run.transitions.run(() => operate(run, request)), {
    validator: validateOperation,
  });

  // The api starts the workflow once the rollout's row is committed.
  const strategy = await load(run);

  for (;;) {
    switch (run.state) {
      case 'pending':
      case 'paused':
        // Paused with agents that were offline at their push: they settle as they come back
        // (until the rollout moves on), rather than only after the resume.
        if (run.state === 'paused' && hasDeferred(run) && patched(SETTLE_WHILE_PAUSED)) {
          await awaitLateArrivals(run);
          if (stateNow(run) === 'paused' && !hasDeferred(run)) await condition(() => run.state !== 'paused');
          break;
        }
        await condition(() => run.state !== 'pending' && run.state !== 'paused');
        break;
      case 'scheduled':
        await awaitStart(run);
        break;
      case 'running':
        await runOrFail(run, strategy);
        break;
      case 'rolling-back':
        await rollBack(run);
        break;
      default: {
        // Completed with agents that were offline when pushed: they still get the version
        // until the late-arrival window closes (or a rollback moves the rollout on).
        if (run.state === 'completed' && hasDeferred(run) && patched(LATE_ARRIVALS)) {
          if (patched(LATE_WINDOW)) await awaitLateWindow(run, strategy);
          else await awaitLateArrivals(run);
          break;
        }
        // A final state: let an operation that is still running (e.g. a rollback that
        // arrived with this run's start) finish, then end unless it moved us on.
        await condition(allHandlersFinished);
        const outcome = finalOutcome(run);
        if (outcome) return outcome;
      }
    }
    await continueAsNewWhenLong(run);
  }
}

/** A run that has not loaded its rollout yet (`loading`: updates wait for the load). */
function newRun(input: RolloutWorkflowInput): RolloutRun {
  const run: RolloutRun = {
    input,
    state: 'loading',
    rowVersion: 0,
    currentBatch: 0,
    lastBatch: undefined,
    reason: undefined,
    counts: undefined,
    summary: undefined,
    bakeUntil: input.bakeUntil ?? 0,
    batchWait: undefined,
    bakeWatch: undefined,
    startAt: null,
    finishedAt: null,
    transitions: oneAtATime(() => run.state !== 'loading'),
    unfinishedBatch: false,
  };
  return run;
}

/** The answer to `rolloutStatusQuery`. */
function statusOf(run: RolloutRun): RolloutStatus {
  const { state, currentBatch, rowVersion, reason, counts, lastBatch } = run;
  return { state, currentBatch, rowVersion, reason, counts, lastBatch };
}

/** The Temporal UI's view of the rollout now (metadata, not a command: replay is unaffected). */
function showDetails(run: RolloutRun) {
  setCurrentDetails(currentDetails(run));
}

/** The state now (handlers change it while the main loop awaits; TypeScript's narrowing cannot know). */
const stateNow = (run: RolloutRun): RolloutState | 'loading' => run.state;

/** Reads the rollout from the database into the run; answers its strategy. */
async function load(run: RolloutRun): Promise<RolloutStrategy> {
  const loaded = await quick.loadRollout(run.input.rolloutId);
  run.state = loaded.state;
  run.rowVersion = loaded.rowVersion;
  run.currentBatch = loaded.currentBatch;
  run.reason = loaded.reason;
  run.counts = loaded.counts;
  run.summary = loaded.summary;
  run.startAt = loaded.startAt ?? null;
  run.finishedAt = loaded.finishedAt ?? null;
  showDetails(run);
  run.unfinishedBatch = run.currentBatch > 0;
  return loaded.strategy;
}

/**
 * A transition through the `transitionRollout` activity; the run takes in the state it
 * answers (the new one, or the one that refused it).
 */
async function transition(
  run: RolloutRun,
  to: RolloutState,
  options: { from: RolloutState[]; versions?: number[]; reason?: string | null; actor?: string },
) {
  const result = await quick.transitionRollout({ rolloutId: run.input.rolloutId, to, ...options });
  if (result.ok) {
    run.state = result.state;
    run.rowVersion = result.rowVersion;
    if (options.reason !== undefined) run.reason = options.reason;
    run.counts = result.counts ?? run.counts;
    showDetails(run);
    upsertSearchAttributes([{ key: rolloutStateKey, value: run.state }]);
    if (FINAL_ROLLOUT_STATES.includes(run.state)) run.finishedAt ??= Date.now();
    if (run.state === 'aborted' || run.state === 'rolling-back') run.batchWait?.cancel();
    if (run.state !== 'running') run.bakeWatch?.cancel();
    if (run.lateWait && run.state !== run.lateWait.state) run.lateWait.scope.cancel();
  } else if (result.state) {
    run.state = result.state;
    run.rowVersion = result.rowVersion ?? run.rowVersion;
  }
  return result;
}

/** The workflow's own transitions: only from where it believes the rollout is. */
function move(run: RolloutRun, to: RolloutState, from: RolloutState[], reason?: string) {
  return run.transitions.run(() =>
    from.includes(run.state as RolloutState) ? transition(run, to, { from, reason }) : Promise.resolve(undefined),
  );
}

/**
 * An operator's operation (`operateRolloutUpdate`, run one at a time): refused unless the
 * rollout is in a state it may start from, or when its transition is not applied.
 */
async function operate(run: RolloutRun, request: RolloutOperationRequest): Promise<RolloutOperationResult> {
  const rule = ROLLOUT_TRANSITIONS[request.operation];
  const current = run.state as RolloutState;
  // A start or resume before the rollout's startAt waits for it, scheduled.
  const to = rule.to === 'running' ? startedState(run.startAt, run.currentBatch, Date.now()) : rule.to;
  if (!rule.from.includes(current)) {
    throw ApplicationFailure.nonRetryable(
      refusedOperation(current, request.operation),
      ROLLOUT_FAILURES.invalidTransition,
      {
        state: current,
      },
    );
  }
  const reason =
    request.operation === 'rollback'
      ? `rolled back by ${request.actor}`
      : request.operation === 'abort'
        ? `aborted by ${request.actor}`
        : null;
  const result = await transition(run, to, {
    from: [current],
    versions: request.versions,
    reason,
    actor: request.actor,
  });
  if (!result.ok) {
    const type =
      result.why === 'precondition' ? ROLLOUT_FAILURES.preconditionFailed : ROLLOUT_FAILURES.invalidTransition;
    throw ApplicationFailure.nonRetryable(
      `The rollout is ${run.state}; the ${request.operation} was not applied.`,
      type,
      {
        state: run.state,
      },
    );
  }
  return { state: result.state, rowVersion: result.rowVersion };
}

/**
 * Refused before it enters history: an operation that does not exist.
 * The payload comes off the wire: typed as the contract says, checked as if it were not.
 */
function validateOperation(request: RolloutOperationRequest | undefined) {
  if (!request || !Object.hasOwn(ROLLOUT_TRANSITIONS, request.operation))
    throw new Error(`unknown operation ${String(request?.operation)}`);
}

/** The next step of a running rollout; an activity that fails for good fails the rollout. */
async function runOrFail(run: RolloutRun, strategy: RolloutStrategy) {
  try {
    await runNextBatch(run, strategy);
  } catch (error) {
    // An activity that cannot succeed by retrying (e.g. the version is no longer
    // pushable): the rollout fails with the reason rather than retrying for ever.
    if (!(error instanceof ActivityFailure && error.cause instanceof ApplicationFailure && error.cause.nonRetryable))
      throw error;
    await move(run, 'failed', ['running'], error.cause.message);
  }
}

/** A scheduled rollout: a timer until its `startAt`, then `running` (a pause or abort meanwhile moves it elsewhere). */
async function awaitStart(run: RolloutRun) {
  const left = (run.startAt ?? 0) - Date.now();
  if (left > 0 && (await condition(() => run.state !== 'scheduled', left))) return;
  await move(run, 'running', ['scheduled']);
}

/**
 * Before a batch: waits until one of the strategy's windows is open (a timer to the next
 * opening, announced once by `rollout.waiting-for-window`); false when the rollout left
 * `running` meanwhile. A batch that started finishes whatever the clock says.
 */
async function awaitWindow(run: RolloutRun, windows: RolloutWindow[]): Promise<boolean> {
  const opens = nextWindowOpening(windows, Date.now());
  if (opens <= Date.now()) return true;
  run.waitingForWindow = opens;
  showDetails(run);
  await quick.announceWindowWait({ rolloutId: run.input.rolloutId, batch: run.currentBatch + 1, opensAt: opens });
  const moved = await condition(() => run.state !== 'running', opens - Date.now());
  run.waitingForWindow = undefined;
  showDetails(run);
  return !moved;
}

/** Pushes every touched agent its version from before, waits for their reports, and ends rolled back. */
async function rollBack(run: RolloutRun) {
  await waiting.startRollback({ rolloutId: run.input.rolloutId });
  await waiting.awaitRollback({ rolloutId: run.input.rolloutId });
  await move(run, 'rolled-back', ['rolling-back']);
}

const hasDeferred = (run: RolloutRun) => (run.counts?.progress.deferred ?? 0) > 0;

/**
 * Waits (a call at a time, each up to half a day) until the rollout's deferred agents have
 * all settled, or a completed rollout's late-arrival window closed; leaving the state it
 * started in (a rollback; a paused rollout's resume or abort) cancels the wait, and the loop
 * follows the new state.
 */
async function awaitLateArrivals(run: RolloutRun, until?: number) {
  // Histories from before the paused wait cancelled a completed rollout's through batchWait.
  const scope = new CancellationScope();
  const paused = run.state === 'paused';
  if (paused) run.lateWait = { scope, state: 'paused' };
  else run.batchWait = scope;
  try {
    const wait = waitsFor();
    const settled = await scope.run(() => wait.awaitLateArrivals({ rolloutId: run.input.rolloutId, until }));
    run.counts = settled.counts;
    showDetails(run);
  } catch (error) {
    if (!isCancellation(error)) throw error;
  } finally {
    if (paused) run.lateWait = undefined;
    else run.batchWait = undefined;
  }
}

/**
 * A completed rollout's late-arrival window, held by the workflow: one watch of up to 12
 * hours (`awaitLateArrivals` until the slot's end), and the slot waited out if the watch
 * ended early with agents still deferred; once the window has passed, `expireLateArrivals`
 * skips the rest. Called again by the loop until nobody is deferred.
 */
async function awaitLateWindow(run: RolloutRun, strategy: RolloutStrategy) {
  const windowEnd = (run.finishedAt ?? Date.now()) + offlineRules(strategy).lateArrivalSeconds * 1000;
  if (Date.now() >= windowEnd) {
    const expired = await quick.expireLateArrivals({ rolloutId: run.input.rolloutId });
    run.counts = expired.counts;
    showDetails(run);
    return;
  }
  const slotEnd = Math.min(windowEnd, Date.now() + LATE_WATCH_MAX_MS);
  await awaitLateArrivals(run, slotEnd);
  if (hasDeferred(run) && stateNow(run) === 'completed' && Date.now() < slotEnd)
    await condition(() => run.state !== 'completed', slotEnd - Date.now());
}

/** The run's result once the rollout is in a final state; undefined while it is not. */
function finalOutcome(run: RolloutRun): RolloutOutcome | undefined {
  const { state } = run;
  if (state === 'loading' || !FINAL_ROLLOUT_STATES.includes(state)) return undefined;
  const final = { state, reason: run.reason ?? null, counts: run.counts, lastBatch: run.lastBatch };
  return { ...final, outcome: outcomeLine(final) };
}

/** Continues as new (carrying the bake) once the history is long, after operations in flight finish. */
async function continueAsNewWhenLong(run: RolloutRun) {
  const { input } = run;
  if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (input.historyLimit ?? HISTORY_LIMIT)) {
    await condition(() => allHandlersFinished() && !run.transitions.busy());
    await continueAsNew<typeof rolloutWorkflow>({
      rolloutId: input.rolloutId,
      tenantId: input.tenantId,
      bakeUntil: run.bakeUntil,
      historyLimit: input.historyLimit,
    });
  }
}

/**
 * Finishes the batch a run started mid-rollout found, or (once the last batch has baked)
 * prepares and pushes the next one; with no agent left, the rollout is completed.
 */
async function runNextBatch(run: RolloutRun, strategy: RolloutStrategy) {
  if (run.unfinishedBatch) {
    run.unfinishedBatch = false;
    await pushAndAwait(run, strategy, run.currentBatch, { resumed: true });
    return;
  }
  if (run.bakeUntil > Date.now()) {
    if (strategy.healthGate) await bakeWatchingHealth(run, strategy);
    // The rest of the bake (all of it without a gate; with one, the watch's clock may run ahead of ours).
    if (stateNow(run) === 'running' && run.bakeUntil > Date.now())
      await condition(() => run.state !== 'running', run.bakeUntil - Date.now());
    if (stateNow(run) !== 'running') return;
  }
  run.bakeUntil = 0;
  if (strategy.windows?.length && !(await awaitWindow(run, strategy.windows))) return;
  const batch = run.currentBatch + 1;
  const prepared = await quick.prepareBatch({ rolloutId: run.input.rolloutId, batch });
  if (!prepared.running) return; // an operator moved it meanwhile; the loop follows the new state
  if (prepared.agents === 0) {
    // No agent left: there is no batch `batch`, and the rollout is done.
    await move(run, 'completed', ['running']);
    return;
  }
  run.currentBatch = batch;
  showDetails(run);
  await pushAndAwait(run, strategy, batch);
}

/** Pushes batch `batch`, waits for its agents' reports and judges it (`resumed`: a previous run pushed it). */
async function pushAndAwait(
  run: RolloutRun,
  strategy: RolloutStrategy,
  batch: number,
  options: { resumed?: boolean } = {},
) {
  const { pushed } = await waiting.pushBatch({ rolloutId: run.input.rolloutId, batch });
  if (stateNow(run) !== 'running') return;
  let outcome;
  try {
    run.batchWait = new CancellationScope();
    const wait = waitsFor();
    outcome = await run.batchWait.run(() => wait.awaitBatch({ rolloutId: run.input.rolloutId, batch }));
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Aborted: the agents that have not answered are given up. Rolling back: they are rolled back.
    // (The abort's transition settled them already, and its counts are the run's.)
    if (stateNow(run) === 'aborted')
      await quick.abandonBatch({ rolloutId: run.input.rolloutId, batch, reason: ABANDONED_BY_ABORT });
    return;
  } finally {
    run.batchWait = undefined;
  }
  const lastBatch: BatchOutcome = {
    batch,
    pushed: outcome.pushed,
    succeeded: outcome.succeeded,
    failed: outcome.failed,
    skipped: outcome.skipped,
    ...(outcome.deferred ? { deferred: outcome.deferred } : {}),
  };
  run.lastBatch = lastBatch;
  run.counts = outcome.counts ?? run.counts;
  showDetails(run);
  // A batch a previous run had already judged is not judged again (a resume would re-pause).
  if (options.resumed && pushed === 0 && outcome.awaited === 0) return;
  await judgeBatch(run, strategy, lastBatch);
}

/**
 * Too many failures (over `maxFailurePercent` of the agents that answered) pause or roll
 * back the rollout; otherwise the batch bakes before the next one.
 */
async function judgeBatch(run: RolloutRun, strategy: RolloutStrategy, outcome: BatchOutcome) {
  if (await stopOnFailures(run, strategy, outcome)) return;
  run.bakeUntil = Date.now() + strategy.bakeSeconds * 1000;
}

/** Pauses or rolls back the rollout (`onFailure`) when the batch failed beyond the threshold; true when it did. */
async function stopOnFailures(run: RolloutRun, strategy: RolloutStrategy, outcome: BatchOutcome): Promise<boolean> {
  const reason = batchFailure(strategy, outcome);
  if (reason === undefined) return false;
  // Only a rollout still running reacts: an operator may have paused or aborted it meanwhile.
  await move(run, strategy.onFailure === 'rollback' ? 'rolling-back' : 'paused', ['running'], reason);
  return true;
}

/**
 * The bake under the health gate: the batch's agents are watched until the bake ends; each
 * time the gate fails some, the batch is judged again (the rollout may pause or roll back).
 * Leaving `running` stops the watch (after a pause's resume the bake, and the watch, go on to
 * the same end).
 */
async function bakeWatchingHealth(run: RolloutRun, strategy: RolloutStrategy) {
  for (;;) {
    let watched;
    try {
      run.bakeWatch = new CancellationScope();
      watched = await run.bakeWatch.run(() =>
        cancellableWait.watchBatchHealth({
          rolloutId: run.input.rolloutId,
          batch: run.currentBatch,
          until: run.bakeUntil,
        }),
      );
    } catch (error) {
      if (!isCancellation(error)) throw error;
      // Paused (or ended); a resume that came before the watch had stopped watches on.
      if (stateNow(run) !== 'running') return;
      continue;
    } finally {
      run.bakeWatch = undefined;
    }
    run.lastBatch = watched.outcome;
    run.counts = watched.counts;
    showDetails(run);
    // None failed: the watch reached the bake's end. Some did, and the batch may go on: watch on.
    if (watched.failedNow === 0 || (await stopOnFailures(run, strategy, watched.outcome))) return;
  }
}
