import { randomUUID } from 'node:crypto';
import type { Db } from '../../../db/connection';
import { emitEvents } from '../../../db/repos/events';
import { findPeer } from '../../../db/repos/federation-peers';
import { liveGroupIds } from '../../../db/repos/groups';
import {
  agentsInRunningHandovers,
  candidateAgents,
  finishHandover,
  findHandover,
  groupCandidateIds,
  handoverAgentsQuery as handoverAgentsRows,
  handoverCounts,
  handoverCountsOf,
  insertHandover,
  listHandoversQuery,
  skipPending,
  UNHANDABLE_STATUSES,
  type HandoverAgentRow,
  type HandoverRow,
} from '../../../db/repos/handovers';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { conflictOnDuplicate, problems } from '../../problems';
import type { FederationRouteOptions } from '.';
import { HandoverWorkflows } from './handover-workflow';
import {
  createHandoverBody,
  handoverAgentSchema,
  handoverAgentsQuery,
  handoverId,
  handoverListQuery,
  handoverSchema,
  presentHandover,
  presentHandoverAgent,
} from './handovers-schema';
import { MAX_HANDOVER_AGENTS } from './incoming-schema';

const HANDOVERS = '/api/federation/handovers';
const tag = 'federation';
/** How many offending agents a refusal names (a request may name 10,000). */
const NAMED = 10;

type CreateBody = { agentIds?: string[]; groupId?: string };

/** The agents a request names, each of the tenant and still its to hand over (400/404/409 naming them otherwise). */
async function requestedAgents(db: Db, tenantId: string, body: CreateBody): Promise<string[]> {
  if (body.groupId) return groupAgents(db, tenantId, body.groupId);
  const ids = body.agentIds!;
  const status = new Map((await candidateAgents(db, tenantId, ids)).map((agent) => [agent.id, agent.status]));
  const unknown = ids.flatMap((id, index) => (status.has(id) ? [] : [{ id, index }]));
  if (unknown.length > 0)
    throw problems.validation(
      unknown.slice(0, NAMED).map(({ id, index }) => ({ path: `body.agentIds.${index}`, message: `no agent '${id}'` })),
    );
  const gone = ids.filter((id) => UNHANDABLE_STATUSES.includes(status.get(id)!));
  if (gone.length > 0) {
    const named = gone.slice(0, NAMED).map((id) => `'${id}' (${status.get(id)})`);
    throw problems.conflict(`Agents that cannot be handed over: ${named.join(', ')}${more(gone)}.`);
  }
  return ids;
}

async function groupAgents(db: Db, tenantId: string, groupId: string): Promise<string[]> {
  if (!(await liveGroupIds(db, tenantId, [groupId])).has(groupId)) throw problems.notFound('group', groupId);
  const ids = await groupCandidateIds(db, tenantId, groupId, MAX_HANDOVER_AGENTS + 1);
  if (ids.length === 0) throw problems.conflict(`Group '${groupId}' has no agent that can be handed over.`);
  if (ids.length > MAX_HANDOVER_AGENTS)
    throw problems.validation([
      { path: 'body.groupId', message: `has more than ${MAX_HANDOVER_AGENTS} agents; hand them over in parts` },
    ]);
  return ids;
}

const more = (ids: readonly unknown[]) => (ids.length > NAMED ? ` and ${ids.length - NAMED} more` : '');

/** An agent is in at most one running handover. */
async function refuseBusyAgents(db: Db, ids: string[]): Promise<void> {
  const busy = await agentsInRunningHandovers(db, ids);
  if (busy.length === 0) return;
  const named = busy.slice(0, NAMED).map((row) => `'${row.agent_id}' (handover ${row.handover_id})`);
  throw problems.conflict(`Agents already in a running handover: ${named.join(', ')}${more(busy)}.`);
}

/** Federation: handovers, sender side (admin) (docs/federation.md). */
export function handoverRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings, baseUrl, logger } = options;
  const workflows = new HandoverWorkflows(options.temporal, settings);

  /** Temporal did not take the workflow: the handover ends failed at once, its agents free again. */
  async function giveUp(db: Db, row: HandoverRow, error: unknown): Promise<never> {
    const reason = `the handover's workflow could not be started (${(error as Error).message})`;
    logger.warn({ err: error, handoverId: row.id }, 'handover not started');
    await db.transaction(async (trx) => {
      await skipPending(trx, row.id, reason);
      await finishHandover(trx, row.id, 'failed', reason);
      await emitEvents(trx, [
        {
          tenantId: row.tenant_id,
          type: 'federation.handover.failed',
          source: HANDOVERS,
          subject: row.id,
          data: { id: row.id, reason },
        },
      ]);
    });
    throw problems.unavailable(
      `Temporal did not take the handover (${(error as Error).message}); nothing was offered. Retry.`,
    );
  }

  return [
    route({
      method: 'post',
      path: HANDOVERS,
      summary: 'Hand agents (by id, or a group’s) over to a peer; the handover’s workflow starts at once',
      tag,
      permission: 'admin',
      resource: 'handover',
      transactional: false, // starts a workflow: no transaction held while Temporal answers
      body: createHandoverBody,
      response: { status: 201, description: 'The handover, running.', schema: handoverSchema },
      handler: async ({ db, principal, body }) => {
        const tenantId = principal.tenantId;
        const { row, count } = await db.transaction(async (trx) => {
          const peer = await findPeer(trx, tenantId, body.peerId);
          if (!peer) throw problems.notFound('peer', body.peerId);
          const agentIds = await requestedAgents(trx, tenantId, body);
          await refuseBusyAgents(trx, agentIds);
          const handover = {
            id: randomUUID(),
            tenant_id: tenantId,
            peer_id: peer.id,
            peer_name: peer.name,
            deadline_seconds: body.deadlineSeconds ?? settings.federation.handoverDeadlineSeconds,
            created_by: principal.name,
          };
          const row = await insertHandover(trx, handover, agentIds).catch(
            conflictOnDuplicate('An agent of the request joined a running handover meanwhile; retry.'),
          );
          await emitEvents(trx, [
            {
              tenantId,
              type: 'federation.handover.started',
              source: HANDOVERS,
              subject: row.id,
              data: { id: row.id, peerId: peer.id, peerName: peer.name, agentCount: agentIds.length },
            },
          ]);
          return { row, count: agentIds.length };
        });
        await workflows.start(row, count).catch((error: unknown) => giveUp(db, row, error));
        return {
          status: 201,
          resourceId: row.id,
          body: presentHandover(row, await handoverCounts(db, row.id)),
          headers: { Location: `${HANDOVERS}/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: HANDOVERS,
      summary: 'List handovers (sender side), newest first',
      tag,
      permission: 'read',
      query: handoverListQuery,
      response: { status: 200, description: 'A page of handovers.', schema: pageOf(handoverSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<HandoverRow>(listHandoversQuery(db, principal.tenantId, query), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'desc',
        });
        const counts = await handoverCountsOf(
          db,
          page.rows.map((row) => row.id),
        );
        return { body: respondPage(ctx, baseUrl, page, (row) => presentHandover(row, counts.get(row.id)!)) };
      },
    }),
    route({
      method: 'get',
      path: `${HANDOVERS}/{id}`,
      summary: 'One handover: its state and how many of its agents are in each state',
      tag,
      permission: 'read',
      resource: 'handover',
      params: handoverId,
      response: { status: 200, description: 'The handover.', schema: handoverSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findHandover(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('handover', params.id);
        return { body: presentHandover(row, await handoverCounts(db, row.id)) };
      },
    }),
    route({
      method: 'get',
      path: `${HANDOVERS}/{id}/agents`,
      summary: 'A handover’s agents and their states, by agent id',
      tag,
      permission: 'read',
      resource: 'handover',
      params: handoverId,
      query: handoverAgentsQuery,
      response: { status: 200, description: 'A page of the handover’s agents.', schema: pageOf(handoverAgentSchema) },
      handler: async ({ db, principal, params, query, ctx }) => {
        if (!(await findHandover(db, principal.tenantId, params.id))) throw problems.notFound('handover', params.id);
        const page = await paginate<HandoverAgentRow>(handoverAgentsRows(db, params.id, query), query, {
          columns: [{ column: 'agent_id', type: 'uuid' }],
          direction: 'asc',
        });
        return { body: respondPage(ctx, baseUrl, page, presentHandoverAgent) };
      },
    }),
  ];
}
