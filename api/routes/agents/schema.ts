import { AgentCapability, capabilityNames, type AgentCapabilityName } from '../../../domain/agent-capabilities';
import { AGENT_HEALTHS, AGENT_STATUSES, APPLIED_STATUSES, type AgentRow } from '../../../db/repos/agents';
import { decimalQuery, z } from '../../http/zod';
import { requires } from '../../http/query-rules';
import { labelQuery } from '../../http/labels';

export const agentSchema = z
  .object({
    id: z.string().openapi({ description: 'The OpAMP instance uid.' }),
    name: z.string(),
    groupId: z.string(),
    labels: z.record(z.string(), z.string()),
    status: z.enum(AGENT_STATUSES),
    lastSeenAt: z.string().nullable(),
    description: z
      .record(z.string(), z.unknown())
      .openapi({ description: "The agent's identifying and non-identifying attributes." }),
    capabilities: z.number().int().openapi({ description: 'OpAMP AgentCapabilities bit mask.' }),
    capabilityNames: z
      .array(z.enum(Object.keys(AgentCapability) as [AgentCapabilityName, ...AgentCapabilityName[]]))
      .openapi({ description: 'The bits of `capabilities` by their OpAMP names, in bit order.' }),
    desired: z
      .object({ configurationId: z.string(), version: z.number().int().nullable(), hash: z.string().nullable() })
      .nullable(),
    applied: z
      .object({
        configurationId: z.string().nullable(),
        version: z.number().int().nullable(),
        hash: z.string().nullable(),
        status: z.enum(APPLIED_STATUSES).nullable(),
        error: z.string().nullable(),
      })
      .nullable(),
    certificate: z
      .object({ serial: z.string(), notAfter: z.string().nullable(), revokedAt: z.string().nullable() })
      .nullable(),
    health: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({
        description:
          'The last OpAMP ComponentHealth the agent reported, in protobuf JSON form: `healthy`, `startTimeUnixNano`, ' +
          '`statusTimeUnixNano` (decimal strings), `status`, `lastError` and `componentHealthMap` (the same shape per ' +
          'component). Null until the agent reports health.',
        example: {
          healthy: true,
          startTimeUnixNano: '1763798400000000000',
          status: 'StatusOK',
          componentHealthMap: {},
        },
      }),
    effectiveConfigHash: z.string().nullable().openapi({
      description: 'sha256 (hex) of the effective configuration the agent last reported; null until it reports one.',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Agent');

/** The agents list's rule between its filters: a version is of a configuration. */
export const AGENT_QUERY_RULES = [requires('version', 'configurationId')];

export const AGENT_SORTS = ['id', 'name', '-name'] as const;

/** The keyset of each order of the agents list (`paginate`). */
export function agentSortKeys(sort: (typeof AGENT_SORTS)[number]) {
  const id = { column: 'id', type: 'uuid' } as const;
  if (sort === 'id') return { columns: [id], direction: 'asc' as const };
  return {
    columns: [{ column: 'name', type: 'text' } as const, id],
    direction: sort === 'name' ? ('asc' as const) : ('desc' as const),
  };
}

export const agentListQuery = z.object({
  groupId: z.uuid().optional(),
  status: z.enum(AGENT_STATUSES).optional(),
  label: labelQuery,
  configurationId: z.uuid().optional().openapi({ description: 'Desired configuration.' }),
  version: decimalQuery(1, 2_147_483_647)
    .optional()
    .openapi({ description: 'Desired version; requires `configurationId`.' }),
  q: z.string().min(1).max(100).optional().openapi({ description: 'Substring of the name, or a prefix of the id.' }),
  health: z.enum(AGENT_HEALTHS).optional().openapi({
    description:
      'By the last ComponentHealth the agent reported: `healthy`, `unhealthy`, or `unknown` (none reported yet).',
  }),
  sort: z.enum(AGENT_SORTS).default('id').openapi({
    description:
      'The order: by `id` (default), or by `name` A–Z (`-name`: Z–A; agents of one name by id). A cursor continues the order it was made in: pass the same `sort` with it.',
  }),
  applied: z
    .enum(APPLIED_STATUSES)
    .optional()
    .openapi({ description: "By the status of the agent's last configuration report (`FAILED`: failed applies)." }),
});

export const moveBody = z.object({ groupId: z.uuid() }).strict().openapi('AgentMove');

const iso = (date: Date | null) => date?.toISOString() ?? null;

export function presentAgent(row: AgentRow): z.infer<typeof agentSchema> {
  return {
    id: row.id,
    name: row.name,
    groupId: row.group_id,
    labels: row.labels,
    status: row.status,
    lastSeenAt: iso(row.last_seen_at),
    description: row.description,
    capabilities: row.capabilities,
    capabilityNames: capabilityNames(row.capabilities),
    desired: row.desired_configuration_id
      ? { configurationId: row.desired_configuration_id, version: row.desired_version, hash: row.desired_hash }
      : null,
    applied:
      row.applied_configuration_id || row.applied_status || row.applied_hash
        ? {
            configurationId: row.applied_configuration_id,
            version: row.applied_version,
            hash: row.applied_hash,
            status: row.applied_status,
            error: row.applied_error,
          }
        : null,
    certificate: row.certificate_serial
      ? {
          serial: row.certificate_serial,
          notAfter: iso(row.certificate_not_after),
          revokedAt: iso(row.certificate_revoked_at),
        }
      : null,
    health: row.health ?? null,
    effectiveConfigHash: row.effective_config_hash ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
