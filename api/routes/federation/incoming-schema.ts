import type { IncomingAgent, IncomingHandoverRow } from '../../../db/repos/incoming-handovers';
import { MAX_HANDOVER_AGENTS } from '../../../domain/federation/handovers';
import { z } from '../../http/zod';

/** The longest a sender may ask the receiver to keep admitting a handover's agents (Federation:HandoverDeadlineSeconds' maximum). */
const MAX_DEADLINE_SECONDS = 86_400;

/** Agent ids (OpAMP instance uids), each once, lower case as the database spells uuids. */
export const handoverAgentIds = (min: number) =>
  z
    .array(z.uuid().transform((id) => id.toLowerCase()))
    .min(min)
    .max(MAX_HANDOVER_AGENTS)
    .refine((ids) => new Set(ids).size === ids.length, { message: 'must not name an agent twice' })
    .openapi({ uniqueItems: true });

export const incomingId = z.object({ id: z.uuid().transform((id) => id.toLowerCase()) });

export const requestHandoverBody = z
  .object({
    agentIds: handoverAgentIds(1).openapi({ description: 'The instance uids of the agents the sender hands over.' }),
    deadlineSeconds: z.number().int().min(1).max(MAX_DEADLINE_SECONDS).default(3600).openapi({
      description:
        'How long the handover’s agents may still arrive (the rest of the sender’s deadline); the bootstrap token a redeem issues expires then. Default 3600.',
    }),
  })
  .strict()
  .openapi('IncomingHandoverRequest');

export const handoverTokenSchema = z
  .object({
    token: z
      .string()
      .openapi({ description: 'The handover token (`svc-ho.…`), single use. Shown only in this answer.' }),
    expiresAt: z.string().openapi({ description: 'An hour after it was issued.' }),
  })
  .openapi('HandoverToken');

export const redeemBody = z
  .object({ token: z.string().min(1).max(200).openapi({ description: 'The `svc-ho.…` token to redeem.' }) })
  .strict()
  .openapi('HandoverRedeem');

export const redeemedSchema = z
  .object({
    bootstrapToken: z
      .string()
      .openapi({ description: '`svc-bt.…`: admits exactly the handover’s agents, once each. Shown only here.' }),
    endpoint: z.string().openapi({ description: 'The OpAMP endpoint agents connect to here (Agents:PublicEndpoint).' }),
    caPem: z.string().openapi({ description: 'PEM of the CA that signs this installation’s agent certificates.' }),
    expiresAt: z.string().openapi({ description: 'When the bootstrap token stops admitting agents.' }),
  })
  .openapi('HandoverRedeemed');

export const incomingHandoverSchema = z
  .object({
    id: z.string(),
    state: z.enum(['issued', 'redeemed', 'cancelled']),
    requestedBy: z.string(),
    deadlineAt: z.string().nullable(),
    agents: z.array(
      z.object({
        id: z.string(),
        enrolled: z
          .boolean()
          .openapi({ description: 'It enrolled here with the handover’s token and reported since.' }),
        status: z.string().nullable().openapi({ description: 'Its status here; null while it has not arrived.' }),
      }),
    ),
  })
  .openapi('IncomingHandover');

export const cancelBody = z
  .object({
    agentIds: handoverAgentIds(1)
      .optional()
      .openapi({ description: 'The agents no longer coming; omitted: every agent that has not arrived.' }),
  })
  .strict()
  .optional()
  .openapi('IncomingHandoverCancel');

export const cancelledSchema = z
  .object({
    id: z.string(),
    state: z.enum(['issued', 'redeemed', 'cancelled']),
    cancelled: z.array(z.string()).openapi({ description: 'Agents the handover’s token no longer admits.' }),
    alreadyEnrolled: z
      .array(z.string())
      .openapi({ description: 'Agents named that had arrived already: they stay (this installation has them).' }),
  })
  .openapi('IncomingHandoverCancelled');

export function presentIncoming(
  row: IncomingHandoverRow,
  agents: IncomingAgent[],
): z.infer<typeof incomingHandoverSchema> {
  return {
    id: row.id,
    state: row.state,
    requestedBy: row.requested_by,
    deadlineAt: row.deadline_at?.toISOString() ?? null,
    agents: agents.map((agent) => ({ id: agent.id, enrolled: agent.enrolled, status: agent.status })),
  };
}
