import { emitEvents, type EventType } from '../../../db/repos/events';
import {
  approvePolicy,
  findPolicy,
  identitiesBehind,
  insertPolicy,
  insertPoliciesIfAbsent,
  listPoliciesQuery,
  replacePolicy,
  setPolicyEnabled,
  type PolicyRow,
} from '../../../db/repos/policies';
import { liveGroupIds } from '../../../db/repos/groups';
import type { Db } from '../../../db/connection';
import type { Principal } from '../../auth/principal';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { BUILTIN_AUTHOR, BUILTIN_POLICIES } from '../../../domain/policies/builtin';
import { checkExpression } from '../../../domain/policies/cel';
import { evaluatePolicies } from '../../../domain/policies/evaluate';
import { conflictOnDuplicate, problems, type FieldError } from '../../problems';
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

type PolicyBody = z.output<typeof policyBody>;

async function emitPolicyEvent(db: Db, type: EventType, row: PolicyRow): Promise<void> {
  await emitEvents(db, [
    { tenantId: row.tenant_id, type, source: '/api/policies', subject: row.id, data: presentPolicy(row) },
  ]);
}

/** The built-in policies, created (with their events, in one transaction) the first time a tenant lists its policies. */
async function ensureBuiltins(db: Db, tenantId: string): Promise<void> {
  const builtins = BUILTIN_POLICIES.map((policy) => ({
    ...policy,
    tenant_id: tenantId,
    scope: [],
    enabled: false,
    builtin: true,
    author: BUILTIN_AUTHOR,
    state: 'approved' as const,
    approver: BUILTIN_AUTHOR,
    approved_at: new Date(),
  }));
  await db.transaction(async (trx) => {
    const created = await insertPoliciesIfAbsent(trx, builtins);
    for (const row of created) await emitPolicyEvent(trx, 'policy.created', row);
  });
}

/** The expression must type-check to bool: the checker's message (with its offset) otherwise. */
function expressionErrors(expression: string): FieldError[] {
  const checked = checkExpression(expression);
  return checked.ok ? [] : [{ path: 'body.expression', message: checked.message }];
}

/**
 * The expression must type-check to bool (400); scope must name live groups of the tenant
 * (404 for one it does not have, as a rollout's target answers). Returns the body with its
 * scope deduplicated and sorted, as it is stored and compared.
 */
async function checkPolicyBody(db: Db, tenantId: string, body: PolicyBody): Promise<PolicyBody> {
  const errors = expressionErrors(body.expression);
  if (errors.length > 0) throw problems.validation(errors);
  const groups = await liveGroupIds(db, tenantId, body.scope);
  const missing = body.scope.find((id) => !groups.has(id));
  if (missing !== undefined) throw problems.notFound('group', missing);
  return { ...body, scope: [...new Set(body.scope)].sort() };
}

const uniqueName = (name: string) => conflictOnDuplicate(`A policy named '${name}' already exists.`);

/**
 * After a conditional UPDATE matched nothing: tell the caller why, or return the row
 * when the operation was already done (`done`), which makes it idempotent.
 */
async function explainNoMatch(
  db: Db,
  tenantId: string,
  id: string,
  versions: number[] | undefined,
  refuse: (row: PolicyRow) => void,
  done: (row: PolicyRow) => boolean,
) {
  const row = await findPolicy(db, tenantId, id);
  if (!row) throw problems.notFound('policy', id);
  if (versions && !versions.includes(row.row_version)) throw problems.preconditionFailed('policy', id);
  refuse(row);
  if (done(row)) return row;
  throw problems.conflict(`Policy '${id}' changed during the request; retry.`);
}

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
      const versions = ifMatchVersions(ctx);
      let row = await setPolicyEnabled(db, principal.tenantId, params.id, enabled, versions);
      if (row) await emitPolicyEvent(db, 'policy.updated', row);
      else
        row = await explainNoMatch(
          db,
          principal.tenantId,
          params.id,
          versions,
          () => {},
          (r) => r.enabled === enabled,
        );
      return respond(row);
    },
  });
}

/**
 * An admin other than the author approves. A PAT counts as the admin who issued it, so
 * neither an admin's own PAT nor a policy written through it gets round the rule.
 */
async function refuseSelfApproval(db: Db, principal: Principal, row: PolicyRow, approver: string[]): Promise<void> {
  const author = await identitiesBehind(db, principal.tenantId, row.author);
  const shared = author.find((name) => approver.includes(name));
  if (!shared) return;
  throw problems.forbidden(
    shared === row.author && shared === principal.name
      ? `'${principal.name}' wrote policy '${row.name}' and cannot approve it; another admin must.`
      : `'${principal.name}' cannot approve policy '${row.name}': it was written by '${row.author}' and both act for '${shared}'; another admin must.`,
  );
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
          await ensureBuiltins(db, principal.tenantId);
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
      handler: async ({ db, principal, body: request }) => {
        const body = await checkPolicyBody(db, principal.tenantId, request);
        const row = await insertPolicy(db, { ...body, tenant_id: principal.tenantId, author: principal.name }).catch(
          uniqueName(body.name),
        );
        await emitPolicyEvent(db, 'policy.created', row);
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
      handler: async ({ db, principal, params, body: request, ctx }) => {
        const body = await checkPolicyBody(db, principal.tenantId, request);
        const versions = ifMatchVersions(ctx);
        const row = await replacePolicy(db, principal.tenantId, params.id, body, versions).catch(uniqueName(body.name));
        if (!row) {
          await explainNoMatch(
            db,
            principal.tenantId,
            params.id,
            versions,
            (r) => {
              if (r.builtin)
                throw problems.conflict(`'${r.name}' is a built-in policy: it can be enabled or disabled, not edited.`);
            },
            () => false,
          );
          throw problems.internal();
        }
        await emitPolicyEvent(db, 'policy.updated', row);
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
        const versions = ifMatchVersions(ctx);
        const current = await findPolicy(db, principal.tenantId, params.id);
        if (!current) throw problems.notFound('policy', params.id);
        const approver =
          principal.kind === 'pat' ? await identitiesBehind(db, principal.tenantId, principal.name) : [principal.name];
        if (versions && !versions.includes(current.row_version)) throw problems.preconditionFailed('policy', params.id);
        await refuseSelfApproval(db, principal, current, approver);
        let row = await approvePolicy(db, principal.tenantId, params.id, approver, versions);
        if (row) await emitPolicyEvent(db, 'policy.approved', row);
        else
          row = await explainNoMatch(
            db,
            principal.tenantId,
            params.id,
            versions,
            () => {},
            (r) => r.state === 'approved',
          );
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
        const errors = expressionErrors(body.expression);
        if (errors.length > 0) throw problems.validation(errors);
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
