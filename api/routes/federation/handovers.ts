import type { Db } from '../../../db/connection';
import {
  findHandover,
  handoverAgentsQuery as handoverAgentsRows,
  handoverCounts,
  handoverCountsOf,
  listHandoversQuery,
  type HandoverAgentRow,
  type HandoverRow,
} from '../../../db/repos/handovers';
import { abandonHandover, startHandover } from '../../../domain/federation/handovers';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { problems } from '../../problems';
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

const HANDOVERS = '/api/federation/handovers';
const tag = 'federation';

/** Federation: handovers, sender side (admin) (docs/federation.md). */
export function handoverRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings, baseUrl, logger } = options;
  const workflows = new HandoverWorkflows(options.temporal, settings);

  /** Temporal did not take the workflow: the handover ends failed at once, its agents free again. */
  async function giveUp(db: Db, row: HandoverRow, error: unknown): Promise<never> {
    const reason = `the handover's workflow could not be started (${(error as Error).message})`;
    logger.warn({ err: error, handoverId: row.id }, 'handover not started');
    await db.transaction((trx) => abandonHandover(trx, row, reason));
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
        const { row, agentCount } = await db.transaction((trx) =>
          startHandover(trx, {
            tenantId: principal.tenantId,
            peerId: body.peerId,
            agentIds: body.agentIds,
            groupId: body.groupId,
            deadlineSeconds: body.deadlineSeconds ?? settings.federation.handoverDeadlineSeconds,
            createdBy: principal.name,
          }),
        );
        await workflows.start(row, agentCount).catch((error: unknown) => giveUp(db, row, error));
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
