/**
 * Hands agents to a peer (`handover:<id>`, docs/federation.md): prepare the receiver (its
 * token, redeemed into the offer), offer the connected agents, wait until the receiver has
 * them or the deadline passes, compensate the rest, and settle. Activities act on the
 * database and the peer, each idempotent; this only decides. No activity per agent: each
 * step works on all of the handover's agents in the database, so a handover of 10,000 agents
 * has the history of one of three: six activities, some forty events (more with retries).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  handoverStatusQuery,
  type HandoverOutcome,
  type HandoverStatus,
  type HandoverWorkflowInput,
} from './definitions';

const retry = { initialInterval: '2 seconds', maximumInterval: '30 seconds' } as const;

/** Database steps, and peer calls that are not waited on until the deadline. */
const quick = proxyActivities<Activities>({ startToCloseTimeout: '2 minutes', retry });
/** Best effort: a few tries, then the handover ends without it. */
const bestEffort = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { ...retry, maximumAttempts: 3 },
});

/** A waiting activity ends itself at the deadline; this much later Temporal stops retrying it. */
const WAIT_GRACE_MS = 10_000;

/** Activities that get until the deadline (Temporal retries a peer that does not answer until then). */
function untilDeadline(deadlineAt: number, heartbeat?: string) {
  return proxyActivities<Activities>({
    scheduleToCloseTimeout: Math.max(deadlineAt - Date.now() + (heartbeat ? WAIT_GRACE_MS : 0), 1000),
    startToCloseTimeout: '10 minutes',
    ...(heartbeat ? { heartbeatTimeout: heartbeat } : {}),
    retry,
  });
}

export async function handoverWorkflow(input: HandoverWorkflowInput): Promise<HandoverOutcome> {
  const status: HandoverStatus = { step: 'loading', deadlineAt: null, outcome: null };
  setHandler(handoverStatusQuery, () => status);
  const at = (step: HandoverStatus['step']) => {
    status.step = step;
    setCurrentDetails(handoverDetails(input.handoverId, status));
  };
  const settled = (outcome: HandoverOutcome) => {
    status.outcome = outcome;
    at('settled');
    return outcome;
  };
  const step = { handoverId: input.handoverId, tenantId: input.tenantId };
  const { deadlineAt, running } = await quick.loadHandover(step);
  status.deadlineAt = new Date(deadlineAt).toISOString();
  if (!running) return settled(await quick.settleHandover(step)); // ended already: its outcome again

  try {
    at('preparing the receiver');
    await untilDeadline(deadlineAt).prepareHandoverReceiver({ ...step, deadlineAt });
  } catch (error) {
    await bestEffort.cancelOnReceiver(step).catch(() => log.warn('receiver not told the handover failed'));
    const failure = whyFailed(error, 'the receiver could not be prepared');
    return settled(await quick.settleHandover({ ...step, failure }));
  }

  at('offering');
  await quick.offerHandover(step);
  try {
    at('waiting for the receiver');
    await untilDeadline(deadlineAt, '30 seconds').awaitHandedOver({ ...step, deadlineAt });
  } catch (error) {
    log.warn('stopped waiting for the receiver', { reason: whyFailed(error, 'no answer') });
  }
  at('compensating');
  const { receiverTold } = await quick.compensateHandover(step);
  return settled(await quick.settleHandover({ ...step, receiverUntold: !receiverTold }));
}

/** The Temporal UI's current details of a handover. */
function handoverDetails(handoverId: string, status: HandoverStatus): string {
  const lines = [`**${status.step}**${status.deadlineAt ? ` · deadline ${status.deadlineAt}` : ''}`];
  const outcome = status.outcome;
  if (outcome)
    lines.push(
      `- Outcome: ${outcome.state}${outcome.reason ? ` (${outcome.reason})` : ''}: ${outcome.handedOver} handed over, ${outcome.withdrawn} withdrawn, ${outcome.missing ?? 0} missing, ${outcome.skipped} skipped`,
    );
  lines.push(`- REST: GET /api/federation/handovers/${handoverId}`);
  return lines.join('\n');
}

/** The failure's own words (a receiver's refusal), or what a timeout means here. */
function whyFailed(error: unknown, timedOut: string): string {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof TimeoutFailure) return `${timedOut} before the deadline`;
  if (cause instanceof ApplicationFailure) return cause.message;
  return (cause as Error)?.message ?? String(cause);
}
