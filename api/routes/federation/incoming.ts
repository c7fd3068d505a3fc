import { findIncomingHandover, incomingAgents } from '../../../db/repos/incoming-handovers';
import { agentCaCertificatePem } from '../../../domain/certificates';
import {
  cancelIncomingAgents,
  redeemHandoverToken,
  requestIncomingHandover,
} from '../../../domain/federation/incoming-handovers';
import { route, type RouteDef } from '../../http/route';
import { problems } from '../../problems';
import type { FederationRouteOptions } from '.';
import {
  cancelBody,
  cancelledSchema,
  handoverTokenSchema,
  incomingHandoverSchema,
  incomingId,
  presentIncoming,
  redeemBody,
  redeemedSchema,
  requestHandoverBody,
} from './incoming-schema';

const INCOMING = '/api/federation/incoming/handovers';
const tag = 'federation';

/** Federation: handovers, receiver side (peer): issue, redeem, status, cancel (docs/federation.md). */
export function incomingHandoverRoutes(options: FederationRouteOptions): RouteDef[] {
  return [...issueRoutes(options), ...followRoutes()];
}

/** A sender asks for a handover here (issue), and redeems its token into an enrolment. */
function issueRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings } = options;
  return [
    route({
      method: 'put',
      path: `${INCOMING}/{id}`,
      summary:
        'A peer asks to hand these agents over (id: the sender’s handover id): a single-use handover token, valid an hour; a repeated call before redeem replaces it',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      params: incomingId,
      body: requestHandoverBody,
      response: {
        status: 201,
        description: 'The handover token, shown this once.',
        schema: handoverTokenSchema,
        alternatives: [{ status: 200, description: 'The new handover token of a repeated call, replacing the first.' }],
      },
      handler: async ({ db, principal, params, body }) => {
        const { token, expiresAt, repeated } = await requestIncomingHandover(db, {
          id: params.id,
          tenantId: principal.tenantId,
          requestedBy: principal.name,
          agentIds: body.agentIds,
          deadlineSeconds: body.deadlineSeconds,
        });
        return {
          status: repeated ? 200 : 201,
          body: { token, expiresAt: expiresAt.toISOString() },
          headers: { 'Cache-Control': 'no-store' },
        };
      },
    }),
    route({
      method: 'post',
      path: '/api/federation/handover/redeem',
      summary:
        'Redeem a handover token (once) into a bootstrap token that admits exactly the handover’s agents, with this installation’s agent endpoint and CA',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      body: redeemBody,
      response: {
        status: 200,
        description: 'Where and how the agents enrol here; the bootstrap token is shown this once.',
        schema: redeemedSchema,
      },
      handler: async ({ db, principal, body }) => {
        const request = { tenantId: principal.tenantId, token: body.token, redeemedBy: principal.name };
        const { handover, bootstrapToken, expiresAt } = await redeemHandoverToken(db, request);
        return {
          resourceId: handover.id,
          body: {
            bootstrapToken,
            endpoint: settings.federation.agentEndpoint,
            caPem: await agentCaCertificatePem(db, settings),
            expiresAt: expiresAt.toISOString(),
          },
          headers: { 'Cache-Control': 'no-store' },
        };
      },
    }),
  ];
}

/** A sender follows its handover here, or cancels it. */
function followRoutes(): RouteDef[] {
  return [
    route({
      method: 'get',
      path: `${INCOMING}/{id}`,
      summary: 'Which of an incoming handover’s agents have enrolled here',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      params: incomingId,
      response: { status: 200, description: 'The handover and each of its agents.', schema: incomingHandoverSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findIncomingHandover(db, principal.tenantId, params.id);
        if (!row || row.tenant_id !== principal.tenantId) throw problems.notFound('incoming handover', params.id);
        return { body: presentIncoming(row, await incomingAgents(db, row)) };
      },
    }),
    route({
      method: 'post',
      path: `${INCOMING}/{id}/cancel`,
      summary:
        'The sender gives up on these agents (or on every one not arrived): the handover’s token no longer admits them; idempotent',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      params: incomingId,
      body: cancelBody,
      response: {
        status: 200,
        description: 'What the token no longer admits, and who had arrived already.',
        schema: cancelledSchema,
      },
      handler: async ({ db, principal, params, body }) => {
        const request = { tenantId: principal.tenantId, id: params.id, agentIds: body?.agentIds };
        return { body: { id: params.id, ...(await cancelIncomingAgents(db, request)) } };
      },
    }),
  ];
}
