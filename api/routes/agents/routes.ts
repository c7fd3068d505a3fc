import { agentHistoryQuery, type AgentHistoryRow } from '../../../db/repos/agent-history';
import { findAgent, listAgentsQuery, type AgentRow } from '../../../db/repos/agents';
import { decideAgent, moveAgentToGroup, revokeAgentAccess } from '../../../domain/agents';
import { agentCaCertificatePem } from '../../../domain/certificates';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';
import { labelFilter } from '../../http/labels';
import { AGENT_QUERY_RULES, agentListQuery, agentSchema, agentSortKeys, moveBody, presentAgent } from './schema';
import { agentHistoryEntrySchema, historyKeys, presentHistoryEntry } from './history';
import { effectiveConfigRoute } from './effective-config';

const enrolmentSchema = z
  .object({
    endpoint: z.string().openapi({ description: 'The OpAMP endpoint agents connect to (Agents:PublicEndpoint).' }),
    caUrl: z.string().openapi({ description: 'Where the CA agents trust the endpoint by is served (PEM).' }),
  })
  .openapi('AgentEnrolment');

// An agent's id is its OpAMP instance uid: any 16 bytes, so any 8-4-4-4-12 hex, not only RFC UUIDs.
const agentId = z.object({ id: z.guid() });

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
        const page = await paginate<AgentRow>(
          listAgentsQuery(db, principal.tenantId, filters),
          query,
          agentSortKeys(query.sort),
        );
        return { body: respondPage(ctx, options.baseUrl, page, presentAgent) };
      },
    }),
    // Before /api/agents/{id}, which would take `enrolment` and `ca.pem` for ids.
    route({
      method: 'get',
      path: '/api/agents/enrolment',
      summary: 'Where agents enrol: the OpAMP endpoint to connect to and the CA to trust it by',
      tag: 'agents',
      permission: 'read',
      response: {
        status: 200,
        description: 'What an agent is configured with, besides its token.',
        schema: enrolmentSchema,
      },
      handler: async () => ({
        body: { endpoint: options.settings.federation.agentEndpoint, caUrl: '/api/agents/ca.pem' },
      }),
    }),
    route({
      method: 'get',
      path: '/api/agents/ca.pem',
      summary: "The agents' CA certificate (PEM): what agents, and peers' handover offers, trust the agent listener by",
      tag: 'agents',
      permission: 'read',
      response: {
        status: 200,
        description: 'The certificate, PEM.',
        schema: z.string(),
        contentType: 'application/x-pem-file',
      },
      handler: async ({ db }) => ({ body: await agentCaCertificatePem(db, options.settings) }),
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
      method: 'get',
      path: '/api/agents/{id}/history',
      summary: "The agent's history: what was pushed to it, by which rollout, and what it said",
      tag: 'agents',
      permission: 'read',
      resource: 'agent',
      params: agentId,
      query: pageQuery.extend({ rolloutId: z.uuid().optional() }).strict(),
      response: {
        status: 200,
        description: 'A page of entries, newest first.',
        schema: pageOf(agentHistoryEntrySchema),
      },
      handler: async ({ db, principal, params, query, ctx }) => {
        const agent = await findAgent(db, principal.tenantId, params.id);
        if (!agent) throw problems.notFound('agent', params.id);
        const history = agentHistoryQuery(db, principal.tenantId, agent.id, { rolloutId: query.rolloutId });
        const page = await paginate<AgentHistoryRow>(history, query, historyKeys('desc'));
        return { body: respondPage(ctx, options.baseUrl, page, presentHistoryEntry) };
      },
    }),
    effectiveConfigRoute(),
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
        const { agent } = await moveAgentToGroup(db, principal.tenantId, { agentId: params.id, groupId: body.groupId });
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
        body: presentAgent(await revokeAgentAccess(db, principal.tenantId, params.id)),
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
        body: presentAgent(await decideAgent(db, principal.tenantId, params.id, 'approve', principal.name)),
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
        body: presentAgent(await decideAgent(db, principal.tenantId, params.id, 'reject', principal.name)),
      }),
    }),
  ];
}
