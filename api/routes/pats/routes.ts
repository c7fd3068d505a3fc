import { notify } from '../../../db/notify';
import { findPat, listPatsQuery, type PatRow } from '../../../db/repos/pats';
import { issuePat, patView, revokePat } from '../../../domain/tokens/pats';
import { PAT_CHANGES_CHANNEL } from '../../auth/pat-auth';
import type { Principal } from '../../auth/principal';
import { ROLES, withinCeiling, type Role } from '../../auth/roles';
import { endpointOverlapsRoute, HUB_ENDPOINT, parseEndpoint } from '../../http/endpoints';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { problems, type FieldError } from '../../problems';

export const createPatBody = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, '1-100 of A-Z a-z 0-9 . _ -, starting with a letter or digit'),
    role: z.enum(ROLES),
    allowedEndpoints: z
      .array(
        // Its shape and that it names a route are checked together (checkEndpoints): the
        // document says so with a format of its own, which a pattern would override.
        z
          .string()
          .max(300)
          .openapi({ format: 'api-endpoint', description: 'A method and a path of this document (or the hub).' }),
      )
      .min(1)
      .max(100)
      .optional()
      .openapi({
        description:
          'Limit the token to these calls, e.g. `"POST /api/rollouts/{id}/start"`; `{x}` matches one path segment.',
      }),
    expiresInDays: z
      .number()
      .int()
      .min(1)
      .max(3650)
      .optional()
      .openapi({ description: 'Lifetime (default: the tenant’s, else 90 days).' }),
  })
  .strict()
  .openapi('PatCreate');

export const patSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    role: z.enum(ROLES),
    allowedEndpoints: z.array(z.string()).nullable(),
    state: z.enum(['active', 'revoked', 'expired']),
    expiresAt: z.string(),
    revokedAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .openapi('Pat');

const createdPatSchema = patSchema
  .extend({
    token: z.string().openapi({ description: 'The token itself. Shown only in this response; store it now.' }),
  })
  .openapi('PatCreated');

/** The PAT as the API shows it: the same view its events carry. */
const presentPat = (row: PatRow): z.infer<typeof patSchema> => ({ ...patView(row), role: row.role as Role });

/**
 * Each entry must name a route that exists; a PAT that is itself limited may only hand
 * on calls it is allowed to make.
 */
function checkEndpoints(entries: string[], routes: RouteDef[], issuer: Principal): FieldError[] {
  const errors: FieldError[] = [];
  entries.forEach((entry, i) => {
    const endpoint = parseEndpoint(entry);
    if (!endpoint) {
      errors.push({ path: `body.allowedEndpoints.${i}`, message: 'must look like "POST /api/rollouts/{id}/start"' });
    } else if (
      entry !== HUB_ENDPOINT &&
      !routes.some((r) => r.path.startsWith('/api/') && endpointOverlapsRoute(endpoint, r.method, r.path))
    ) {
      errors.push({ path: `body.allowedEndpoints.${i}`, message: `no API route matches "${entry}"` });
    } else if (issuer.allowedEndpoints && !issuer.allowedEndpoints.includes(entry)) {
      errors.push({ path: `body.allowedEndpoints.${i}`, message: 'is not among the endpoints your own token allows' });
    }
  });
  if (issuer.allowedEndpoints && entries.length === 0) {
    errors.push({ path: 'body.allowedEndpoints', message: 'is required when your own token is limited to endpoints' });
  }
  return errors;
}

const patId = z.object({ id: z.uuid() });

export interface PatRouteOptions {
  defaultTtlDays: number;
  baseUrl: string;
  /** Every route of the app, to check allowed-endpoint entries against. */
  routes: () => RouteDef[];
  /** Forget a revoked token in this process's cache (other replicas hear the NOTIFY). */
  evict: (patId: string) => void;
}

export function patRoutes(options: PatRouteOptions): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/pats',
      summary: 'List personal access tokens',
      tag: 'pats',
      permission: 'admin',
      query: pageQuery
        .extend({ role: z.enum(ROLES).optional(), state: z.enum(['active', 'revoked', 'expired']).optional() })
        .strict(),
      response: { status: 200, description: 'A page of PATs (never their tokens).', schema: pageOf(patSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<PatRow>(listPatsQuery(db, principal.tenantId, query), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'desc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentPat) };
      },
    }),
    route({
      method: 'get',
      path: '/api/pats/{id}',
      summary: 'One personal access token',
      tag: 'pats',
      permission: 'admin',
      resource: 'pat',
      params: patId,
      response: { status: 200, description: 'The PAT.', schema: patSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findPat(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('PAT', params.id);
        return { body: presentPat(row) };
      },
    }),
    route({
      method: 'post',
      path: '/api/pats',
      summary: 'Issue a personal access token (the token is shown once)',
      tag: 'pats',
      permission: 'admin',
      resource: 'pat',
      body: createPatBody,
      response: { status: 201, description: 'The PAT, with its token.', schema: createdPatSchema },
      handler: async ({ db, principal, body }) => {
        if (!withinCeiling(body.role, principal.permissions)) {
          throw problems.forbidden(`You may not issue a PAT with role ${body.role}, which is above your own.`);
        }
        const errors = checkEndpoints(body.allowedEndpoints ?? [], options.routes(), principal);
        if (errors.length > 0) throw problems.validation(errors);
        const request = {
          tenantId: principal.tenantId,
          name: body.name,
          role: body.role,
          allowedEndpoints: body.allowedEndpoints ?? null,
          expiresInDays: body.expiresInDays,
          createdBy: principal.name,
        };
        const { row, token } = await issuePat(db, request, options.defaultTtlDays);
        return {
          status: 201,
          body: { ...presentPat(row), token },
          resourceId: row.id,
          headers: { Location: `/api/pats/${row.id}` },
        };
      },
    }),
    route({
      method: 'post',
      path: '/api/pats/{id}/revoke',
      summary: 'Revoke a personal access token (takes effect on every replica at once)',
      tag: 'pats',
      permission: 'admin',
      resource: 'pat',
      params: patId,
      response: { status: 200, description: 'The revoked PAT.', schema: patSchema },
      handler: async ({ db, principal, params, afterCommit }) => {
        const row = await revokePat(db, principal.tenantId, params.id);
        await notify(db, PAT_CHANGES_CHANNEL, row.id);
        afterCommit(() => options.evict(row.id));
        return { body: presentPat(row) };
      },
    }),
  ];
}
