import {
  countAuditCallsQuery,
  fewRowsList,
  listAuditQuery,
  verifyAuditChain,
  type AuditCall,
} from '../../../db/repos/audit';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { decimalQuery, z } from '../../http/zod';

export const auditEventSchema = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    occurredAt: z.string(),
    actorType: z.enum(['oidc', 'session', 'pat', 'anonymous', 'webhook']),
    actor: z.string().nullable().openapi({ description: 'OIDC subject or PAT name.' }),
    actorId: z.string().nullable().openapi({
      description: "The actor's id: the PAT's id, the OIDC subject, a webhook's source; null for an anonymous call.",
    }),
    method: z.string(),
    path: z.string(),
    route: z.string().nullable(),
    status: z.number().int(),
    resourceType: z.string().nullable(),
    resourceId: z.string().nullable(),
    requestId: z.string().nullable(),
    sourceAddress: z.string().nullable(),
    hash: z.string().openapi({
      description:
        'SHA-256 (hex) of the chain link that holds this event: over the previous link’s hash and this event, or, for calls appended together in one batch (reads and refused calls), over all of them; those calls share it.',
    }),
  })
  .openapi('AuditEvent');

function presentAudit(row: AuditCall): z.infer<typeof auditEventSchema> {
  return {
    id: row.id,
    seq: row.seq,
    occurredAt: row.occurred_at.toISOString(),
    actorType: row.actor_type,
    actor: row.actor,
    actorId: row.actor_id,
    method: row.method,
    path: row.path,
    route: row.route,
    status: row.status,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    requestId: row.request_id,
    sourceAddress: row.source_address,
    hash: row.hash.toString('hex'),
  };
}

const auditQuery = pageQuery
  .extend({
    actor: z.string().max(200).optional(),
    actorType: z.enum(['oidc', 'session', 'pat', 'anonymous', 'webhook']).optional(),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).optional(),
    status: decimalQuery(100, 599).optional(),
    resourceType: z.string().max(100).optional(),
    resourceId: z.string().max(200).optional(),
    requestId: z.string().max(128).optional(),
    seq: decimalQuery(1, Number.MAX_SAFE_INTEGER)
      .optional()
      .openapi({ description: 'The event with this sequence number, such as `firstBrokenSeq` of /api/audit/verify.' }),
    from: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Events at or after this time.' }),
    to: z.iso.datetime({ offset: true }).optional().openapi({ description: 'Events before this time.' }),
  })
  .strict();

export function auditRoutes(baseUrl: string): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/audit/events',
      summary: 'The audit log of the caller’s tenant, newest first',
      tag: 'audit',
      permission: 'audit',
      query: auditQuery,
      response: { status: 200, description: 'A page of audit events.', schema: pageOf(auditEventSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const { limit: _limit, offset: _offset, cursor: _cursor, from, to, ...filtered } = query;
        const filters = {
          ...filtered,
          from: from ? new Date(from) : undefined,
          to: to ? new Date(to) : undefined,
        };
        const unfiltered = Object.values(filters).every((value) => value === undefined);
        // A link's calls follow each other in seq order, so (link_seq, seq) sorts as seq does.
        const page = await paginate<AuditCall>(
          listAuditQuery(db, principal.tenantId, filters, await fewRowsList(db, principal.tenantId, filters)),
          query,
          {
            columns: [
              { column: 'link_seq', type: 'bigint' },
              { column: 'seq', type: 'bigint' },
            ],
            direction: 'desc',
          },
          unfiltered ? countAuditCallsQuery(db, principal.tenantId) : undefined,
        );
        return { body: respondPage(ctx, baseUrl, page, presentAudit) };
      },
    }),
    route({
      method: 'get',
      path: '/api/audit/verify',
      summary: 'Verify the hash chain of the caller’s tenant’s audit log',
      tag: 'audit',
      permission: 'audit',
      response: {
        status: 200,
        description: 'Whether every event links to the one before it and its digest matches.',
        schema: z.object({
          valid: z.boolean(),
          checked: z.number().int(),
          firstBrokenSeq: z.number().int().nullable(),
        }),
      },
      handler: async ({ db, principal }) => ({ body: await verifyAuditChain(db, principal.tenantId) }),
    }),
  ];
}
