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
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  FEDERATED_TRANSITIONS,
  type FederatedRolloutState,
  FINAL_FEDERATED_STATES,
  refusedFederatedOperation,
  ROLLOUT_OPERATION_PAST,
} from '../domain/rollouts';
import {
  ROLLOUT_FAILURES,
  operateFederatedRolloutUpdate,
  type FederatedRolloutOperationRequest,
  type FederatedRolloutOutcome,
  type FederatedRolloutWorkflowInput,
} from './definitions';
import { oneAtATime } from './one-at-a-time';

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

export async function federatedRolloutWorkflow(input: FederatedRolloutWorkflowInput): Promise<FederatedRolloutOutcome> {
  const id = input.federatedRolloutId;
  let state: FederatedRolloutState | 'loading' = 'loading';
  let rowVersion = 0;
  let reason: string | null;
  const stateNow = () => state; // handlers change it while lanes await; narrowing cannot know

  /** One transition at a time: the lanes' and operators' updates never interleave. */
  const transitions = oneAtATime(() => state !== 'loading');
  const exclusively = transitions.run;

  async function transition(
    to: FederatedRolloutState,
    options: { from: FederatedRolloutState[]; versions?: number[]; reason?: string | null; actor?: string },
  ) {
    const result = await quick.transitionFederatedRollout({ federatedRolloutId: id, to, ...options });
    if (result.ok || result.state) [state, rowVersion] = [result.state!, result.rowVersion ?? rowVersion];
    if (result.ok && options.reason !== undefined) reason = options.reason;
    return result;
  }

  /** The workflow's own transitions: only from where it believes the federated rollout is. */
  const move = (to: FederatedRolloutState, from: FederatedRolloutState[], why: string | null) =>
    exclusively(async () => {
      if (from.includes(state as FederatedRolloutState)) await transition(to, { from, reason: why });
    });

  setHandler(
    operateFederatedRolloutUpdate,
    (request) =>
      exclusively(async () => {
        const current = state as FederatedRolloutState;
        const rule = FEDERATED_TRANSITIONS[request.operation];
        const refuse = (type: string) =>
          ApplicationFailure.nonRetryable(
            refusedFederatedOperation(stateNow() as FederatedRolloutState, request.operation),
            type,
          );
        if (!rule.from.includes(current)) throw refuse(ROLLOUT_FAILURES.invalidTransition);
        const why = ['abort', 'rollback'].includes(request.operation)
          ? `${ROLLOUT_OPERATION_PAST[request.operation]} by ${request.actor}`
          : null;
        const result = await transition(rule.to, {
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
          federatedRolloutId: id,
          operation: request.operation,
          actor: request.actor,
        });
        return { state, rowVersion };
      }),
    {
      validator: (request: FederatedRolloutOperationRequest | undefined) => {
        if (!request || !Object.hasOwn(FEDERATED_TRANSITIONS, request.operation))
          throw new Error(`unknown operation ${String(request?.operation)}`);
      },
    },
  );

  const loaded = await quick.loadFederatedRollout(id);
  [state, rowVersion, reason] = [loaded.state, loaded.rowVersion, loaded.reason];
  const started = new Set(loaded.parts.filter((part) => part.started).map((part) => part.position));
  const ended = new Map<number, string>();
  const part = (position: number) => ({ federatedRolloutId: id, position });
  const named = (position: number) => loaded.parts[position]!.name;

  /** A peer that does not answer pauses the federated rollout (the parts followed are paused as they are read). */
  async function pauseForSilence(position: number, error: string) {
    await quick.markFederatedPartUnreachable({ ...part(position), error });
    await move('paused', ['running'], `installation '${named(position)}' does not answer; resume to try again`);
  }

  /** Creates the part's rollout; false when it was refused (the federated rollout failed) or its peer is silent (paused). */
  async function start(position: number): Promise<boolean> {
    try {
      const creating = loaded.parts[position]!.local ? creatingHere : creatingOnPeer;
      const outcome = await creating.createFederatedPart(part(position));
      if (outcome.state === 'denied' || outcome.state === 'failed') {
        await move('failed', ['running', 'paused'], outcome.reason ?? null);
        return false;
      }
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const cause = error.cause;
      if (cause instanceof ApplicationFailure && cause.nonRetryable) {
        await move('failed', ['running', 'paused'], `installation '${named(position)}': ${cause.message}`);
        return false;
      }
      // Retried for about half a minute, then given up: the last attempt says why.
      await pauseForSilence(position, ((cause?.cause ?? cause ?? error) as Error).message);
      return false;
    }
    started.add(position);
    return true;
  }

  /** The part followed to its end; a failure retrying cannot change (its peer was deleted) ends it as failed. */
  async function follow(position: number) {
    try {
      return await following.followFederatedPart(part(position));
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      return { state: 'failed', reason: (error.cause ?? error).message };
    }
  }

  /** One installation's part, from creation to the end of its rollout; the state it ended in (none if never started). */
  async function lane(position: number): Promise<string | undefined> {
    for (;;) {
      await condition(() => stateNow() !== 'paused' && !transitions.busy());
      if (!started.has(position) && (stateNow() !== 'running' || !(await start(position)))) {
        if (stateNow() === 'paused') continue;
        return undefined;
      }
      const outcome = await follow(position);
      if (outcome.state !== 'unreachable') {
        ended.set(position, outcome.state);
        if (outcome.state !== 'completed')
          await move(
            'failed',
            ['running'],
            `installation '${named(position)}': its rollout ${outcome.state}${outcome.reason ? `: ${outcome.reason}` : ''}`,
          );
        return outcome.state;
      }
      await pauseForSilence(position, outcome.reason ?? 'no answer');
    }
  }

  async function runLanes() {
    const positions = loaded.parts.map((p) => p.position);
    if (loaded.mode === 'parallel') await Promise.all(positions.map(lane));
    else for (const position of positions) if ((await lane(position)) !== 'completed') break;
  }

  for (;;) {
    // An update that started this run (a rollback of a finished federated rollout) goes first.
    await condition(allHandlersFinished);
    const now = stateNow() as FederatedRolloutState;
    if (now === 'running') {
      await runLanes();
      if (loaded.parts.every((p) => ended.get(p.position) === 'completed')) await move('completed', ['running'], null);
    } else if (now === 'paused') {
      await condition(() => stateNow() !== 'paused');
    } else if (now === 'rolling-back') {
      await Promise.all([...started].map(follow));
      await move('rolled-back', ['rolling-back'], reason);
    } else if (FINAL_FEDERATED_STATES.includes(now)) {
      return { state: now, reason };
    }
  }
}
