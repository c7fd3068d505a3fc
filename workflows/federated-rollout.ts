/**
 * A configuration version rolled out across installations (`federated-rollout:<id>`,
 * docs/federation.md). Each installation's part is a lane: create its rollout (here, or on a
 * peer through its incoming endpoint), then follow it to its end. Sequential: a lane starts
 * once the one before completed; parallel: all at once. Operators' operations arrive as
 * Updates, move the federated rollout (a conditional write) and are passed on to every
 * part's rollout. A part that fails or is refused fails the federated rollout; a peer that
 * stops answering pauses it, and the operator's resume tries again.
 *
 * History stays small without continue-as-new: a lane is a few activities whatever the
 * rollout's length (following heartbeats, it does not add events), and there are at most 20.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { LoadedFederatedRollout } from '../activities/federation/rollouts';
import {
  FEDERATED_TRANSITIONS,
  type FederatedRolloutState,
  FINAL_FEDERATED_STATES,
  refusedFederatedOperation,
  ROLLOUT_OPERATION_PAST,
} from '../domain/rollouts';
import {
  ROLLOUT_FAILURES,
  federatedRolloutStatusQuery,
  operateFederatedRolloutUpdate,
  type FederatedRolloutStatus,
  type FederatedRolloutOperationRequest,
  type FederatedRolloutOperationResult,
  type FederatedRolloutOutcome,
  type FederatedRolloutWorkflowInput,
} from './definitions';
import { oneAtATime } from './one-at-a-time';
import { federatedRolloutStateKey } from './search-attributes';

/** The patch that made the workflow keep its FederatedRolloutState search attribute: older histories replay without it. */
const STATE_ATTRIBUTE = 'federated-state-attribute';

const retry = { initialInterval: '1 second', maximumInterval: '30 seconds' } as const;
const quick = proxyActivities<Activities>({ startToCloseTimeout: '1 minute', retry });
/** This installation's part is created like any step here: retried until it is done or refused. */
const creatingHere = proxyActivities<Activities>({ startToCloseTimeout: '5 minutes', retry });
/** A peer's part is retried with backoff for about half a minute; a peer silent that long is unreachable. */
const creatingOnPeer = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '40 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});
const following = proxyActivities<Activities>({
  startToCloseTimeout: '30 days',
  heartbeatTimeout: '20 seconds',
  retry,
});

/** What one run knows of its federated rollout, shared by the main loop, its lanes and the update handler. */
interface FederatedRun {
  id: string;
  state: FederatedRolloutState | 'loading';
  rowVersion: number;
  reason: string | null;
  /** One transition at a time: the lanes' and operators' updates never interleave. */
  transitions: ReturnType<typeof oneAtATime>;
  /** Each installation's part, in order (a part's position is its index). */
  parts: LoadedFederatedRollout['parts'];
  mode: LoadedFederatedRollout['mode'];
  /** The positions whose rollout was created (by this run or an earlier one). */
  started: Set<number>;
  /** The state each part's rollout ended in, by position. */
  ended: Map<number, string>;
}

export async function federatedRolloutWorkflow(input: FederatedRolloutWorkflowInput): Promise<FederatedRolloutOutcome> {
  const run = newRun(input);
  setHandler(operateFederatedRolloutUpdate, (request) => run.transitions.run(() => operate(run, request)), {
    validator: validateOperation,
  });
  setHandler(federatedRolloutStatusQuery, () => statusOf(run));

  await load(run);

  for (;;) {
    // An update that started this run (a rollback of a finished federated rollout) goes first.
    await condition(allHandlersFinished);
    const now = stateNow(run) as FederatedRolloutState;
    if (now === 'running') {
      await runLanes(run);
      if (run.parts.every((p) => run.ended.get(p.position) === 'completed'))
        await move(run, 'completed', ['running'], null);
    } else if (now === 'paused') {
      await condition(() => stateNow(run) !== 'paused');
    } else if (now === 'rolling-back') {
      await Promise.all([...run.started].map((position) => follow(run, position)));
      await move(run, 'rolled-back', ['rolling-back'], run.reason);
    } else if (FINAL_FEDERATED_STATES.includes(now)) {
      return { state: now, reason: run.reason };
    }
  }
}

/** The answer to `federatedRolloutStatusQuery`: the state and each installation's part. */
function statusOf(run: FederatedRun): FederatedRolloutStatus {
  return {
    state: run.state,
    reason: run.reason,
    mode: run.mode,
    parts: run.parts.map((p) => ({
      position: p.position,
      name: p.name,
      started: run.started.has(p.position),
      ended: run.ended.get(p.position) ?? null,
    })),
  };
}

/** The Temporal UI's current details (metadata, not a command): the state and each part. */
function showDetails(run: FederatedRun) {
  const status = statusOf(run);
  setCurrentDetails(
    [
      `**${status.state}** · ${status.mode}${status.reason ? ` · ${status.reason}` : ''}`,
      ...status.parts.map((p) => `- ${p.name}: ${p.ended ?? (p.started ? 'running' : 'not started')}`),
      `- REST: GET /api/federation/rollouts/${run.id}`,
    ].join('\n'),
  );
}

/** A run that has not loaded its federated rollout yet (`loading`: updates wait for the load). */
function newRun(input: FederatedRolloutWorkflowInput): FederatedRun {
  const run: FederatedRun = {
    id: input.federatedRolloutId,
    state: 'loading',
    rowVersion: 0,
    reason: null,
    transitions: oneAtATime(() => run.state !== 'loading'),
    parts: [],
    mode: 'sequential',
    started: new Set(),
    ended: new Map(),
  };
  return run;
}

/** The state now (handlers change it while lanes await; TypeScript's narrowing cannot know). */
const stateNow = (run: FederatedRun): FederatedRolloutState | 'loading' => run.state;

/** The part at `position`, as the activities name it. */
const part = (run: FederatedRun, position: number) => ({ federatedRolloutId: run.id, position });

/** The name of the installation at `position`, for reasons an operator reads. */
const named = (run: FederatedRun, position: number) => run.parts[position]!.name;

/** Reads the federated rollout and its parts from the database into the run. */
async function load(run: FederatedRun) {
  const loaded = await quick.loadFederatedRollout(run.id);
  [run.state, run.rowVersion, run.reason] = [loaded.state, loaded.rowVersion, loaded.reason];
  run.parts = loaded.parts;
  run.mode = loaded.mode;
  run.started = new Set(loaded.parts.filter((p) => p.started).map((p) => p.position));
  showDetails(run);
}

/**
 * A transition through the `transitionFederatedRollout` activity; the run takes in the state
 * it answers (the new one, or the one that refused it).
 */
async function transition(
  run: FederatedRun,
  to: FederatedRolloutState,
  options: { from: FederatedRolloutState[]; versions?: number[]; reason?: string | null; actor?: string },
) {
  const result = await quick.transitionFederatedRollout({ federatedRolloutId: run.id, to, ...options });
  if (result.ok || result.state) [run.state, run.rowVersion] = [result.state!, result.rowVersion ?? run.rowVersion];
  if (result.ok && options.reason !== undefined) run.reason = options.reason;
  if (result.ok && patched(STATE_ATTRIBUTE))
    upsertSearchAttributes([{ key: federatedRolloutStateKey, value: run.state }]);
  showDetails(run);
  return result;
}

/** The workflow's own transitions: only from where it believes the federated rollout is. */
function move(run: FederatedRun, to: FederatedRolloutState, from: FederatedRolloutState[], why: string | null) {
  return run.transitions.run(async () => {
    if (from.includes(run.state as FederatedRolloutState)) await transition(run, to, { from, reason: why });
  });
}

/**
 * An operator's operation (`operateFederatedRolloutUpdate`, run one at a time): refused unless
 * the federated rollout is in a state it may start from, or when its transition is not
 * applied; once applied, passed on to every part.
 */
async function operate(
  run: FederatedRun,
  request: FederatedRolloutOperationRequest,
): Promise<FederatedRolloutOperationResult> {
  const current = run.state as FederatedRolloutState;
  const rule = FEDERATED_TRANSITIONS[request.operation];
  const refuse = (type: string) =>
    ApplicationFailure.nonRetryable(
      refusedFederatedOperation(stateNow(run) as FederatedRolloutState, request.operation),
      type,
    );
  if (!rule.from.includes(current)) throw refuse(ROLLOUT_FAILURES.invalidTransition);
  const why = ['abort', 'rollback'].includes(request.operation)
    ? `${ROLLOUT_OPERATION_PAST[request.operation]} by ${request.actor}`
    : null;
  const result = await transition(run, rule.to, {
    from: [current],
    versions: request.versions,
    reason: why,
    actor: request.actor,
  });
  if (!result.ok)
    throw refuse(
      result.why === 'precondition' ? ROLLOUT_FAILURES.preconditionFailed : ROLLOUT_FAILURES.invalidTransition,
    );
  await quick.operateFederatedParts({
    federatedRolloutId: run.id,
    operation: request.operation,
    actor: request.actor,
  });
  return { state: run.state, rowVersion: run.rowVersion };
}

/**
 * Refused before it enters history: an operation that does not exist.
 * The payload comes off the wire: typed as the contract says, checked as if it were not.
 */
function validateOperation(request: FederatedRolloutOperationRequest | undefined) {
  if (!request || !Object.hasOwn(FEDERATED_TRANSITIONS, request.operation))
    throw new Error(`unknown operation ${String(request?.operation)}`);
}

/** A peer that does not answer pauses the federated rollout (the parts followed are paused as they are read). */
async function pauseForSilence(run: FederatedRun, position: number, error: string) {
  await quick.markFederatedPartUnreachable({ ...part(run, position), error });
  await move(run, 'paused', ['running'], `installation '${named(run, position)}' does not answer; resume to try again`);
}

/** Creates the part's rollout; false when it was refused (the federated rollout failed) or its peer is silent (paused). */
async function start(run: FederatedRun, position: number): Promise<boolean> {
  try {
    const creating = run.parts[position]!.local ? creatingHere : creatingOnPeer;
    const outcome = await creating.createFederatedPart(part(run, position));
    if (outcome.state === 'denied' || outcome.state === 'failed') {
      await move(run, 'failed', ['running', 'paused'], outcome.reason ?? null);
      return false;
    }
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const cause = error.cause;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) {
      await move(run, 'failed', ['running', 'paused'], `installation '${named(run, position)}': ${cause.message}`);
      return false;
    }
    // Retried for about half a minute, then given up: the last attempt says why.
    await pauseForSilence(run, position, ((cause?.cause ?? cause ?? error) as Error).message);
    return false;
  }
  run.started.add(position);
  showDetails(run);
  return true;
}

/** The part followed to its end; a failure retrying cannot change (its peer was deleted) ends it as failed. */
async function follow(run: FederatedRun, position: number) {
  try {
    return await following.followFederatedPart(part(run, position));
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return { state: 'failed', reason: (error.cause ?? error).message };
  }
}

/** One installation's part, from creation to the end of its rollout; the state it ended in (none if never started). */
async function lane(run: FederatedRun, position: number): Promise<string | undefined> {
  for (;;) {
    await condition(() => stateNow(run) !== 'paused' && !run.transitions.busy());
    if (!run.started.has(position) && (stateNow(run) !== 'running' || !(await start(run, position)))) {
      if (stateNow(run) === 'paused') continue;
      return undefined;
    }
    const outcome = await follow(run, position);
    if (outcome.state !== 'unreachable') {
      run.ended.set(position, outcome.state);
      showDetails(run);
      if (outcome.state !== 'completed')
        await move(
          run,
          'failed',
          ['running'],
          `installation '${named(run, position)}': its rollout ${outcome.state}${outcome.reason ? `: ${outcome.reason}` : ''}`,
        );
      return outcome.state;
    }
    await pauseForSilence(run, position, outcome.reason ?? 'no answer');
  }
}

/** Every part's lane: one after another until one does not complete (sequential), or all at once (parallel). */
async function runLanes(run: FederatedRun) {
  const positions = run.parts.map((p) => p.position);
  if (run.mode === 'parallel') await Promise.all(positions.map((position) => lane(run, position)));
  else for (const position of positions) if ((await lane(run, position)) !== 'completed') break;
}
