import {
  decidePendingAgent,
  findAgent,
  listAgentsQuery,
  moveAgent,
  revokeAgent,
  type AgentRow,
  type MoveOutcome,
} from '../../../db/repos/agents';
import type { Db } from '../../../db/connection';
import { notifyAgentCutoff } from '../../../db/notify';
import { emitEvents } from '../../../db/repos/events';
import type { GroupRow } from '../../../db/repos/groups';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';
import type { Principal } from '../../auth/principal';
import { labelFilter } from '../../http/labels';
import { AGENT_QUERY_RULES, agentListQuery, agentSchema, moveBody, presentAgent } from './schema';

// An agent's id is its OpAMP instance uid: any 16 bytes, so any 8-4-4-4-12 hex, not only RFC UUIDs.
const agentId = z.object({ id: z.guid() });

/**
 * Both ways of moving an agent (`POST /api/agents/{id}/move`, `POST /api/groups/{id}/members`)
 * answer alike: an agent or group the tenant does not have is 404 naming it, a
 * soft-deleted group 409. A move into the agent's own group changes nothing and emits nothing.
 */
export async function moveAndAnnounce(
  db: Db,
  tenantId: string,
  ids: { agentId: string; groupId: string },
  source: string,
  groupVersions?: number[],
): Promise<{ agent: AgentRow; group: GroupRow }> {
  const outcome: MoveOutcome = await moveAgent(db, tenantId, ids.agentId, ids.groupId, groupVersions);
  switch (outcome.kind) {
    case 'no-agent':
      throw problems.notFound('agent', ids.agentId);
    case 'no-group':
      throw problems.notFound('group', ids.groupId);
    case 'group-deleted':
      throw problems.conflict(
        `Group '${outcome.group.name}' (${ids.groupId}) is deleted; restore it before moving agents into it.`,
      );
    case 'precondition-failed':
      throw problems.preconditionFailed('group', ids.groupId);
    case 'unchanged':
      return outcome;
    case 'moved':
      await emitEvents(db, [
        {
          tenantId,
          type: 'agent.moved',
          source,
          subject: ids.agentId,
          data: { agentId: ids.agentId, fromGroupId: outcome.fromGroupId, toGroupId: ids.groupId },
        },
      ]);
      return outcome;
  }
}

/**
 * Revokes the agent's certificates and its token binding (see revokeAgent), announces it
 * and closes its live sessions on every replica at commit. A repeat changes nothing and
 * emits nothing, but still sends the cut-off.
 */
async function revokeAndAnnounce(db: Db, tenantId: string, agentId: string): Promise<AgentRow> {
  const outcome = await revokeAgent(db, tenantId, agentId);
  if (outcome.kind === 'no-agent') throw problems.notFound('agent', agentId);
  if (outcome.kind === 'handed-over') {
    throw problems.invalidTransition(
      `Agent '${agentId}' is handed-over to another installation; it is no longer this one's to revoke.`,
    );
  }
  if (outcome.changed) {
    await emitEvents(db, [
      {
        tenantId,
        type: 'agent.cert-revoked',
        source: '/api/agents',
        subject: agentId,
        data: { agentId, serials: outcome.serials },
      },
    ]);
  }
  await notifyAgentCutoff(db, { action: 'revoke', agentId });
  return outcome.agent;
}

const decisions = {
  approve: { status: 'enrolling', event: 'agent.approved', by: 'approvedBy' },
  reject: { status: 'revoked', event: 'agent.rejected', by: 'rejectedBy' },
} as const;

/**
 * Approves or rejects an agent held as `pending-approval`; any other status is 409
 * `invalid-state-transition`. Either way the held session is closed at commit: an approved
 * agent reconnects and is admitted, a rejected one is refused.
 */
async function decideAndAnnounce(
  db: Db,
  principal: Principal,
  agentId: string,
  decision: keyof typeof decisions,
): Promise<AgentRow> {
  const { status, event, by } = decisions[decision];
  const outcome = await decidePendingAgent(db, principal.tenantId, agentId, status);
  if (outcome.kind === 'no-agent') throw problems.notFound('agent', agentId);
  if (outcome.kind === 'not-pending') {
    throw problems.invalidTransition(
      `Agent '${agentId}' is ${outcome.agent.status}; only a pending-approval agent can be ${decision}d.`,
    );
  }
  await emitEvents(db, [
    {
      tenantId: principal.tenantId,
      type: event,
      source: '/api/agents',
      subject: agentId,
      data: { agentId, [by]: principal.name },
    },
  ]);
  await notifyAgentCutoff(db, { action: decision, agentId });
  return outcome.agent;
}

export function agentsRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/agents',
      summary: 'List agents',
      tag: 'agents',
      permission: 'read',
      query: pageQuery.extend(agentListQuery.shape).strict(),
      queryRules: AGENT_QUERY_RULES,
      response: { status: 200, description: 'A page of agents, by id.', schema: pageOf(agentSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const filters = { ...query, labels: labelFilter(query.label) };
        const page = await paginate<AgentRow>(listAgentsQuery(db, principal.tenantId, filters), query, {
          columns: [{ column: 'id', type: 'uuid' }],
          direction: 'asc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentAgent) };
      },
    }),
    route({
      method: 'get',
      path: '/api/agents/{id}',
      summary: 'One agent',
      tag: 'agents',
      permission: 'read',
      resource: 'agent',
      params: agentId,
      response: { status: 200, description: 'The agent.', schema: agentSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findAgent(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('agent', params.id);
        return { body: presentAgent(row) };
      },
    }),
    route({
      method: 'post',
      path: '/api/agents/{id}/move',
      summary: 'Move the agent to another group',
      tag: 'agents',
      permission: 'operate',
      resource: 'agent',
      params: agentId,
      body: moveBody,
      response: { status: 200, description: 'The agent, in its new group.', schema: agentSchema },
      handler: async ({ db, principal, params, body }) => {
        const { agent } = await moveAndAnnounce(
          db,
          principal.tenantId,
          { agentId: params.id, groupId: body.groupId },
          '/api/agents',
        );
        return { body: presentAgent(agent) };
      },
    }),
    route({
      method: 'post',
      path: '/api/agents/{id}/revoke-cert',
      summary: "Revoke the agent's certificates and cut it off",
      tag: 'agents',
      permission: 'admin',
      resource: 'agent',
      params: agentId,
      response: {
        status: 200,
        description:
          'The agent, now `revoked`: every certificate revoked, its live connections closed, and the bootstrap token it enrolled with refused to it. ' +
          'It must enroll again with another bootstrap token. Idempotent. 409 `invalid-state-transition` for a handed-over agent.',
        schema: agentSchema,
      },
      handler: async ({ db, principal, params }) => ({
        body: presentAgent(await revokeAndAnnounce(db, principal.tenantId, params.id)),
      }),
    }),
    route({
      method: 'post',
      path: '/api/agents/{id}/approve',
      summary: 'Approve an agent held as pending-approval',
      tag: 'agents',
      permission: 'operate',
      resource: 'agent',
      params: agentId,
      response: {
        status: 200,
        description:
          'The agent, now `enrolling`; it is admitted when it reconnects. 409 `invalid-state-transition` unless it was `pending-approval`.',
        schema: agentSchema,
      },
      handler: async ({ db, principal, params }) => ({
        body: presentAgent(await decideAndAnnounce(db, principal, params.id, 'approve')),
      }),
    }),
    route({
      method: 'post',
      path: '/api/agents/{id}/reject',
      summary: 'Reject an agent held as pending-approval',
      tag: 'agents',
      permission: 'operate',
      resource: 'agent',
      params: agentId,
      response: {
        status: 200,
        description:
          'The agent, now `revoked`; its held connection is closed. 409 `invalid-state-transition` unless it was `pending-approval`.',
        schema: agentSchema,
      },
      handler: async ({ db, principal, params }) => ({
        body: presentAgent(await decideAndAnnounce(db, principal, params.id, 'reject')),
      }),
    }),
  ];
}
