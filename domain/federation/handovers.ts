/**
 * Starting a handover (sender side): the agents an operator names, by id or as a group's,
 * are each of the tenant, in a state that can be handed over, and in no other running
 * handover; the handover is stored with them and `federation.handover.started` written.
 * Starting its workflow is the caller's, after commit; when Temporal does not take it, the
 * caller abandons the handover here, so its agents are free again.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/connection';
import { emitEvents } from '../../db/repos/events';
import { findPeer } from '../../db/repos/federation-peers';
import { liveGroupIds } from '../../db/repos/groups';
import {
  agentsInRunningHandovers,
  candidateAgents,
  finishHandover,
  groupCandidateIds,
  insertHandover,
  skipPending,
  UNHANDABLE_STATUSES,
  type HandoverRow,
} from '../../db/repos/handovers';
import { DomainError, InvalidFieldsError, NotFoundError, refuseDuplicate } from '../errors';

const SOURCE = '/api/federation/handovers';

/** The most agents one handover moves (the sender refuses more, and so does the receiver). */
export const MAX_HANDOVER_AGENTS = 10_000;

/** How many offending agents a refusal names (a request may name 10,000). */
const NAMED = 10;

const more = (ids: readonly unknown[]) => (ids.length > NAMED ? ` and ${ids.length - NAMED} more` : '');

export interface HandoverRequest {
  tenantId: string;
  peerId: string;
  /** The agents by id, or `groupId`'s (one of the two). */
  agentIds?: string[];
  groupId?: string;
  deadlineSeconds: number;
  createdBy: string;
}

/** The agents a request names, each of the tenant and still its to hand over. */
async function requestedAgents(db: Db, request: HandoverRequest): Promise<string[]> {
  if (request.groupId) return groupAgents(db, request.tenantId, request.groupId);
  const ids = request.agentIds!;
  const status = new Map((await candidateAgents(db, request.tenantId, ids)).map((agent) => [agent.id, agent.status]));
  const unknown = ids.flatMap((id, index) => (status.has(id) ? [] : [{ id, index }]));
  if (unknown.length > 0)
    throw new InvalidFieldsError(
      unknown.slice(0, NAMED).map(({ id, index }) => ({ field: `agentIds.${index}`, message: `no agent '${id}'` })),
    );
  const gone = ids.filter((id) => UNHANDABLE_STATUSES.includes(status.get(id)!));
  if (gone.length > 0) {
    const named = gone.slice(0, NAMED).map((id) => `'${id}' (${status.get(id)})`);
    throw new DomainError(`Agents that cannot be handed over: ${named.join(', ')}${more(gone)}.`);
  }
  return ids;
}

async function groupAgents(db: Db, tenantId: string, groupId: string): Promise<string[]> {
  if (!(await liveGroupIds(db, tenantId, [groupId])).has(groupId)) throw new NotFoundError('group', groupId);
  const ids = await groupCandidateIds(db, tenantId, groupId, MAX_HANDOVER_AGENTS + 1);
  if (ids.length === 0) throw new DomainError(`Group '${groupId}' has no agent that can be handed over.`);
  if (ids.length > MAX_HANDOVER_AGENTS)
    throw new InvalidFieldsError([
      { field: 'groupId', message: `has more than ${MAX_HANDOVER_AGENTS} agents; hand them over in parts` },
    ]);
  return ids;
}

/** An agent is in at most one running handover. */
async function refuseBusyAgents(db: Db, ids: string[]): Promise<void> {
  const busy = await agentsInRunningHandovers(db, ids);
  if (busy.length === 0) return;
  const named = busy.slice(0, NAMED).map((row) => `'${row.agent_id}' (handover ${row.handover_id})`);
  throw new DomainError(`Agents already in a running handover: ${named.join(', ')}${more(busy)}.`);
}

const joinedMeanwhile = refuseDuplicate(
  () => new DomainError('An agent of the request joined a running handover meanwhile; retry.'),
);

/** Stores a running handover of the agents the request names; its workflow is the caller's to start. */
export async function startHandover(
  db: Db,
  request: HandoverRequest,
): Promise<{ row: HandoverRow; agentCount: number }> {
  const { tenantId } = request;
  const peer = await findPeer(db, tenantId, request.peerId);
  if (!peer) throw new NotFoundError('peer', request.peerId);
  const agentIds = await requestedAgents(db, request);
  await refuseBusyAgents(db, agentIds);
  const handover = {
    id: randomUUID(),
    tenant_id: tenantId,
    peer_id: peer.id,
    peer_name: peer.name,
    deadline_seconds: request.deadlineSeconds,
    created_by: request.createdBy,
  };
  const row = await insertHandover(db, handover, agentIds).catch(joinedMeanwhile);
  const data = { id: row.id, peerId: peer.id, peerName: peer.name, agentCount: agentIds.length };
  await emitEvents(db, [{ tenantId, type: 'federation.handover.started', source: SOURCE, subject: row.id, data }]);
  return { row, agentCount: agentIds.length };
}

/** A handover that could not run (its workflow was never started): failed at once, nothing offered, its agents free. */
export async function abandonHandover(db: Db, row: HandoverRow, reason: string): Promise<void> {
  await skipPending(db, row.id, reason);
  await finishHandover(db, row.id, 'failed', reason);
  const data = { id: row.id, reason };
  await emitEvents(db, [
    { tenantId: row.tenant_id, type: 'federation.handover.failed', source: SOURCE, subject: row.id, data },
  ]);
}
