import { findPolicy, listPoliciesQuery, type PolicyRow } from '../../../db/repos/policies';
import {
  approvePolicy,
  checkPolicyExpression,
  createPolicy,
  ensureBuiltinPolicies,
  replacePolicy,
  switchPolicy,
} from '../../../domain/policies/operations';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { evaluatePolicies } from '../../../domain/policies/evaluate';
import { problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';
import {
  checkBody,
  checkSchema,
  evaluateBody,
  evaluationSchema,
  policyBody,
  policyId,
  policyListQuery,
  policySchema,
  presentPolicy,
} from './schema';

const respond = (row: PolicyRow) => ({ body: presentPolicy(row), rowVersion: row.row_version, resourceId: row.id });

function switchRoute(enabled: boolean): RouteDef {
  const verb = enabled ? 'enable' : 'disable';
  return route({
    method: 'post',
    path: `/api/policies/{id}/${verb}`,
    summary: `${enabled ? 'Enable' : 'Disable'} a policy (idempotent; does not affect its approval)`,
    tag: 'policies',
    permission: 'operate',
    resource: 'policy',
    etag: true,
    params: policyId,
    response: { status: 200, description: `The ${verb}d policy.`, schema: policySchema },
    handler: async ({ db, principal, params, ctx }) => {
      return respond(await switchPolicy(db, principal.tenantId, params.id, enabled, ifMatchVersions(ctx)));
    },
  });
}

export function policiesRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [...policyRoutes(options), ...evaluationRoutes()];
}

/** Policies: list, read, create, update, approve. */
function policyRoutes(options: ResourceRouteOptions): RouteDef[] {
  const seeded = new Set<string>();
  return [
    route({
      method: 'get',
      path: '/api/policies',
      summary: 'List policies (built-ins included)',
      tag: 'policies',
      permission: 'read',
      query: policyListQuery,
      response: { status: 200, description: 'A page of policies.', schema: pageOf(policySchema) },
      handler: async ({ db, principal, query, ctx }) => {
        if (!seeded.has(principal.tenantId)) {
          await ensureBuiltinPolicies(db, principal.tenantId);
          seeded.add(principal.tenantId); // once per tenant and process, not a write per list
        }
        const page = await paginate<PolicyRow>(listPoliciesQuery(db, principal.tenantId, query), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'asc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentPolicy) };
      },
    }),
    route({
      method: 'get',
      path: '/api/policies/{id}',
      summary: 'One policy',
      tag: 'policies',
      permission: 'read',
      resource: 'policy',
      etag: true,
      params: policyId,
      response: { status: 200, description: 'The policy.', schema: policySchema },
      handler: async ({ db, principal, params }) => {
        const row = await findPolicy(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('policy', params.id);
        return respond(row);
      },
    }),
    route({
      method: 'post',
      path: '/api/policies',
      summary: 'Create a custom policy (as a draft)',
      tag: 'policies',
      permission: 'operate',
      resource: 'policy',
      etag: true,
      body: policyBody,
      response: { status: 201, description: 'The draft policy.', schema: policySchema },
      handler: async ({ db, principal, body }) => {
        const row = await createPolicy(db, principal.tenantId, body, principal.name);
        return { ...respond(row), status: 201, headers: { Location: `/api/policies/${row.id}` } };
      },
    }),
    route({
      method: 'put',
      path: '/api/policies/{id}',
      summary: 'Replace a custom policy (a change to what was approved makes it a draft again)',
      tag: 'policies',
      permission: 'operate',
      resource: 'policy',
      etag: true,
      params: policyId,
      body: policyBody,
      response: { status: 200, description: 'The updated policy.', schema: policySchema },
      handler: async ({ db, principal, params, body, ctx }) => {
        const row = await replacePolicy(db, principal.tenantId, params.id, body, ifMatchVersions(ctx));
        return respond(row);
      },
    }),
    route({
      method: 'post',
      path: '/api/policies/{id}/approve',
      summary: 'Approve a draft policy (an admin other than its author)',
      tag: 'policies',
      permission: 'admin',
      resource: 'policy',
      etag: true,
      params: policyId,
      response: {
        status: 200,
        description: 'The approved policy (approving it again changes nothing).',
        schema: policySchema,
      },
      handler: async ({ db, principal, params, ctx }) => {
        const approver = { name: principal.name, viaPat: principal.kind === 'pat' };
        const row = await approvePolicy(db, principal.tenantId, params.id, approver, ifMatchVersions(ctx));
        return respond(row);
      },
    }),
    switchRoute(true),
    switchRoute(false),
  ];
}

/** Checking a CEL expression, and evaluating the enforced policies against a would-be push. */
function evaluationRoutes(): RouteDef[] {
  return [
    route({
      method: 'post',
      path: '/api/policies/check',
      summary: 'Type-check an expression as creating a policy would, without saving anything',
      tag: 'policies',
      permission: 'operate',
      // Writes nothing: no transaction to hold (the call's audit row is written on its own).
      transactional: false,
      body: checkBody,
      response: { status: 200, description: 'The expression type-checks to bool.', schema: checkSchema },
      handler: async ({ body }) => {
        checkPolicyExpression(body.expression);
        return { body: { ok: true as const } };
      },
    }),
    route({
      method: 'post',
      path: '/api/policies/evaluate',
      summary: 'Dry run: judge a push of a configuration version to a target against the enforced policies',
      tag: 'policies',
      permission: 'operate',
      body: evaluateBody,
      response: {
        status: 200,
        description: "Each agent's verdict and the policies that denied it (never 422).",
        schema: evaluationSchema,
      },
      handler: async ({ db, principal, body }) => ({ body: await evaluatePolicies(db, principal.tenantId, body) }),
    }),
  ];
}
