import { findTenant, type TenantRow } from '../../../db/repos/tenants';
import { changeTenant, tenantView } from '../../../domain/tenants';
import { problems } from '../../problems';
import { ifMatchVersions } from '../../http/etag';
import { route, type RouteDef } from '../../http/route';
import { labelsSchema } from '../../http/labels';
import { plainText } from '../../http/text';
import { z } from '../../http/zod';

const settings = z
  .object({
    patDefaultTtlDays: z.number().int().min(1).max(3650).optional().openapi({
      description: 'Lifetime of a new PAT when its request names none (default: the service setting, 90 days).',
    }),
  })
  .strict();

export const tenantBody = z
  .object({
    displayName: plainText().trim().min(1).max(200),
    description: z.string().max(2000).default(''),
    labels: labelsSchema.default({}),
    settings: settings.default({}),
  })
  .strict()
  .openapi('TenantUpdate');

export const tenantSchema = z
  .object({
    id: z.string(),
    displayName: z.string(),
    description: z.string(),
    labels: z.record(z.string(), z.string()),
    settings,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Tenant');

/** The tenant as the API shows it: the same view its events carry. */
export const presentTenant: (row: TenantRow) => z.infer<typeof tenantSchema> = tenantView;

export function tenantRoutes(): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/tenant',
      summary: "The caller's tenant",
      tag: 'tenant',
      permission: 'read',
      resource: 'tenant',
      etag: true,
      response: { status: 200, description: 'The tenant.', schema: tenantSchema },
      handler: async ({ db, principal }) => {
        const row = await findTenant(db, principal.tenantId);
        if (!row) throw problems.notFound('tenant', principal.tenantId);
        return { body: presentTenant(row), rowVersion: row.row_version, resourceId: row.id };
      },
    }),
    route({
      method: 'put',
      path: '/api/tenant',
      summary: "Replace the caller's tenant settings",
      tag: 'tenant',
      permission: 'admin',
      resource: 'tenant',
      etag: true,
      body: tenantBody,
      response: { status: 200, description: 'The updated tenant.', schema: tenantSchema },
      handler: async ({ db, principal, body, ctx }) => {
        const id = principal.tenantId;
        const changes = {
          display_name: body.displayName,
          description: body.description,
          labels: body.labels,
          settings: body.settings,
        };
        const row = await changeTenant(db, id, changes, ifMatchVersions(ctx));
        return { body: presentTenant(row), rowVersion: row.row_version, resourceId: id };
      },
    }),
  ];
}
