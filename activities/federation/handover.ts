import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Db } from '../../db/connection';
import { notifyAgentCutoff, notifyAgentHandover } from '../../db/notify';
import { emitEvents, type NewEvent } from '../../db/repos/events';
import { findPeer } from '../../db/repos/federation-peers';
import {
  allHandoverAgentIds,
  finishHandover,
  findHandover,
  handoverCounts,
  markHandedOver,
  offerToConnectedAgents,
  offeredAgentIds,
  setHandoverOffer,
  skipPending,
  withdrawOffered,
  type HandoverCounts,
  type HandoverRow,
} from '../../db/repos/handovers';
import { sealOffer, type HandoverOffer } from '../../domain/federation/handover-offer';
import { peerEndpoint } from '../../domain/federation/peer-credentials';
import { isWellFormed } from '../../domain/tokens/secret-token';
import { callPeer, PeerCallError, type PeerCall, type PeerEndpoint } from '../../platform/peer-client';
import { encryptionKey } from '../../platform/secrets';
import type { HandoverOutcome, HandoverWorkflowInput } from '../../workflows/definitions';
import type { ActivityDeps } from '..';

const SOURCE = '/api/federation/handovers';
/** How often the receiver is asked which agents arrived. */
const POLL_EVERY_MS = 2_000;
/** Failure type of a receiver's refusal (a 4xx): retrying cannot change its answer. */
export const PEER_REFUSED = 'peer-refused';

export interface HandoverStep extends HandoverWorkflowInput {
  /** Workflow time (ms) when the receiver's chance ends. */
  deadlineAt?: number;
}

interface IncomingAnswer {
  agents: Array<{ id: string; enrolled: boolean }>;
}

interface CancelAnswer {
  alreadyEnrolled: string[];
}

interface RedeemAnswer {
  bootstrapToken: string;
  endpoint: string;
  caPem: string;
}

/** 4xx but a timeout or a rate limit: the receiver refused, and will again. */
function refusal(error: unknown): ApplicationFailure | undefined {
  if (!(error instanceof PeerCallError) || error.failure !== 'refused') return undefined;
  const status = error.problem?.status;
  if (status === 408 || status === 429) return undefined;
  return ApplicationFailure.nonRetryable(error.message, PEER_REFUSED);
}

async function callReceiver<T>(peer: PeerEndpoint, method: string, path: string, calls: PeerCall, body?: unknown) {
  try {
    return await callPeer<T>(peer, method, path, { ...calls, body });
  } catch (error) {
    throw refusal(error) ?? error;
  }
}

/** What agents will be told to trust comes from another installation: its shape is checked first. */
function offerOf(peer: PeerEndpoint, answer: RedeemAnswer): HandoverOffer {
  const problems = [
    !(typeof answer?.endpoint === 'string' && /^(wss|https):\/\/[^\s]+$/.test(answer.endpoint)) &&
      'endpoint is not a wss:// or https:// URL',
    !(typeof answer?.caPem === 'string' && answer.caPem.includes('-----BEGIN CERTIFICATE-----')) &&
      'caPem is not a PEM certificate',
    !(typeof answer?.bootstrapToken === 'string' && isWellFormed('svc-bt', answer.bootstrapToken)) &&
      'bootstrapToken is not a bootstrap token',
  ].filter(Boolean);
  if (problems.length > 0)
    throw ApplicationFailure.nonRetryable(
      `peer '${peer.name}' redeemed into no usable offer: ${problems.join('; ')}`,
      PEER_REFUSED,
    );
  return { endpoint: answer.endpoint, caPem: answer.caPem, token: answer.bootstrapToken };
}

const incomingPath = (handoverId: string) => `/api/federation/incoming/handovers/${handoverId}`;

/** Activities of the handover workflow's steps (sender side) (docs/federation.md). */
export function createHandoverActivities(deps: ActivityDeps) {
  const { db, settings } = deps;
  const calls: PeerCall = { timeoutMs: settings.federation.peerTimeoutSeconds * 1000, outbound: deps.outbound };
  const key = () => encryptionKey(settings);

  async function mustFind(step: HandoverWorkflowInput): Promise<HandoverRow> {
    const row = await findHandover(db, step.tenantId, step.handoverId);
    if (!row) throw ApplicationFailure.nonRetryable(`handover ${step.handoverId} does not exist`, 'not-found');
    return row;
  }

  /** The receiver, with the credential it accepts from us; a deleted peer fails the handover. */
  async function receiverOf(handover: HandoverRow): Promise<PeerEndpoint> {
    const peer = handover.peer_id ? await findPeer(db, handover.tenant_id, handover.peer_id) : undefined;
    if (!peer) throw ApplicationFailure.nonRetryable(`peer '${handover.peer_name}' was deleted`, PEER_REFUSED);
    return peerEndpoint(key(), peer);
  }

  /** These agents are the receiver's now: here they are handed-over (events, cut-off), in one transaction. */
  async function handOver(handover: HandoverRow, agentIds: string[]): Promise<number> {
    if (agentIds.length === 0) return 0;
    return db.transaction(async (trx) => {
      const moved = await markHandedOver(trx, handover.id, agentIds);
      await emitEvents(
        trx,
        moved.map((agentId) => handoverEvent(handover, 'federation.handover.agent-handed-over', { agentId })),
      );
      for (const agentId of moved) await notifyAgentCutoff(trx, { action: 'handed-over', agentId });
      return moved.length;
    });
  }

  return {
    /** When the handover's deadline passes (ms since the epoch), and whether it still runs. */
    async loadHandover(step: HandoverWorkflowInput): Promise<{ deadlineAt: number; running: boolean }> {
      const row = await mustFind(step);
      return { deadlineAt: row.created_at.getTime() + row.deadline_seconds * 1000, running: row.state === 'running' };
    },

    /**
     * Asks the receiver for a handover token and redeems it into the offer (its endpoint, CA
     * and a bootstrap token for exactly these agents), sealed onto the handover. A retry
     * repeats both calls: the receiver keys them by the handover's id, so it issues a fresh
     * token in place of the first. A refusal fails for good.
     */
    async prepareHandoverReceiver(step: HandoverStep): Promise<void> {
      const handover = await mustFind(step);
      if (handover.offer_ciphertext) return; // prepared by an attempt that died after sealing
      const peer = await receiverOf(handover);
      const agentIds = await allHandoverAgentIds(db, handover.id);
      const deadlineSeconds = Math.max(1, Math.ceil(((step.deadlineAt ?? Date.now()) - Date.now()) / 1000));
      const { token } = await callReceiver<{ token: string }>(peer, 'PUT', incomingPath(handover.id), calls, {
        agentIds,
        deadlineSeconds,
      });
      const offer = await callReceiver<RedeemAnswer>(peer, 'POST', '/api/federation/handover/redeem', calls, {
        token,
      });
      const sealed = sealOffer(key(), handover.id, offerOf(peer, offer));
      await setHandoverOffer(db, handover.id, sealed);
    },

    /** Offers the receiver to the handover's connected agents (the rest are skipped); the gateway sends it. */
    async offerHandover(step: HandoverWorkflowInput): Promise<{ offered: number }> {
      return db.transaction(async (trx) => {
        const offered = await offerToConnectedAgents(trx, step.handoverId);
        await notifyAgentHandover(trx, offered);
        return { offered: offered.length };
      });
    },

    /**
     * Asks the receiver every 2 s which agents arrived and hands those over here, until none
     * is offered any more or the deadline passes. Heartbeats carry how many moved so far; a
     * receiver that does not answer fails the attempt (Temporal retries it until the deadline).
     */
    async awaitHandedOver(step: HandoverStep): Promise<{ handedOver: number; remaining: number }> {
      const context = Context.current();
      const progress = { handedOver: (context.info.heartbeatDetails as { handedOver?: number })?.handedOver ?? 0 };
      const beat = setInterval(() => context.heartbeat(progress), POLL_EVERY_MS);
      try {
        const handover = await mustFind(step);
        const peer = await receiverOf(handover);
        for (;;) {
          context.heartbeat(progress);
          const offered = new Set(await offeredAgentIds(db, handover.id));
          if (offered.size === 0 || Date.now() >= (step.deadlineAt ?? 0))
            return { handedOver: progress.handedOver, remaining: offered.size };
          const answer = await callReceiver<IncomingAnswer>(peer, 'GET', incomingPath(handover.id), calls);
          const arrived = answer.agents.filter((agent) => agent.enrolled && offered.has(agent.id)).map((a) => a.id);
          progress.handedOver += await handOver(handover, arrived);
          if (arrived.length < offered.size) await context.sleep(POLL_EVERY_MS);
        }
      } finally {
        clearInterval(beat);
      }
    },

    /**
     * The deadline passed: the receiver stops admitting the agents still offered, and they stay
     * here (`withdrawn`, or `missing` when not seen here since the offer: the gateway offers
     * them this installation's settings again when they connect). One the
     * receiver says arrived meanwhile is handed over instead. A receiver that does not answer
     * is noted, not waited for: the agents must stay now, and its token expires at the deadline.
     */
    async compensateHandover(step: HandoverWorkflowInput): Promise<{ withdrawn: number; receiverTold: boolean }> {
      const handover = await mustFind(step);
      const remaining = await offeredAgentIds(db, handover.id);
      if (remaining.length === 0) return { withdrawn: 0, receiverTold: true };
      let arrived: string[] = [];
      let receiverTold = true;
      try {
        const peer = await receiverOf(handover);
        const path = `${incomingPath(handover.id)}/cancel`;
        arrived = (await callReceiver<CancelAnswer>(peer, 'POST', path, calls, { agentIds: remaining }))
          .alreadyEnrolled;
      } catch (error) {
        receiverTold = false;
        deps.logger?.warn({ handoverId: handover.id, err: error }, 'receiver not told of the withdrawn agents');
      }
      await handOver(handover, arrived);
      const withdrawn = await db.transaction(async (trx) => {
        const withdrawn = await withdrawOffered(trx, handover.id, {
          withdrawn: 'the receiver did not see it before the deadline',
          missing:
            'not seen here since it was offered the receiver, nor by the receiver: connected to neither installation ' +
            '(offered its settings here again when it reconnects)',
        });
        await notifyAgentHandover(trx, withdrawn);
        return withdrawn;
      });
      return { withdrawn: withdrawn.length, receiverTold };
    },

    /** After a failed preparation: the receiver forgets the request (best effort; nothing was offered). */
    async cancelOnReceiver(step: HandoverWorkflowInput): Promise<void> {
      const handover = await mustFind(step);
      const peer = await receiverOf(handover);
      await callReceiver(peer, 'POST', `${incomingPath(handover.id)}/cancel`, calls, {}).catch((error) => {
        if ((error as ApplicationFailure).type === PEER_REFUSED) return; // never asked, or not ours to cancel
        throw error;
      });
    },

    /** Ends the handover: its final state from its agents' (or `failure`), the event, and the outcome. */
    async settleHandover(
      step: HandoverWorkflowInput & { failure?: string; receiverUntold?: boolean },
    ): Promise<HandoverOutcome> {
      return db.transaction(async (trx) => settle(trx, await mustFind(step), step));
    },
  };
}

async function settle(
  trx: Db,
  handover: HandoverRow,
  { failure, receiverUntold }: { failure?: string; receiverUntold?: boolean },
): Promise<HandoverOutcome> {
  if (failure) await skipPending(trx, handover.id, `the handover failed: ${failure}`);
  const counts = await handoverCounts(trx, handover.id);
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  const handedOver = counts['handed-over'];
  const state: HandoverOutcome['state'] = failure ? 'failed' : handedOver === total ? 'completed' : 'compensated';
  const reason = failure ?? (state === 'completed' ? null : stayedReason(counts, receiverUntold));
  const finished = await finishHandover(trx, handover.id, state, reason);
  const { withdrawn, missing, skipped } = counts;
  const outcome: HandoverOutcome = { state, handedOver, withdrawn, missing, skipped, reason };
  if (finished) await emitEvents(trx, [handoverEvent(handover, `federation.handover.${state}`, { ...outcome })]);
  return finished
    ? outcome
    : { ...outcome, state: handover.state as HandoverOutcome['state'], reason: handover.reason };
}

function stayedReason({ withdrawn, missing, skipped }: HandoverCounts, receiverUntold = false): string {
  const parts = [];
  if (withdrawn > 0) parts.push(`${withdrawn} not seen by the receiver before the deadline`);
  if (skipped > 0) parts.push(`${skipped} not connected`);
  const untold = receiverUntold ? ' (the receiver did not answer the cancel; its token expires at the deadline)' : '';
  const stayed = parts.length > 0 ? `${parts.join(', ')}: they stay here${untold}` : '';
  if (missing === 0) return stayed;
  const lost = `${missing} not seen since the offer, here or by the receiver: they are connected to neither installation`;
  return stayed ? `${stayed}; ${lost}` : `${lost}${untold}`;
}

function handoverEvent(handover: HandoverRow, type: NewEvent['type'], data: Record<string, unknown>): NewEvent {
  return {
    tenantId: handover.tenant_id,
    type,
    source: SOURCE,
    subject: handover.id,
    data: { id: handover.id, peerName: handover.peer_name, ...data },
  };
}
