import {
  HANDOVER_AGENT_STATES,
  type HandoverAgentRow,
  type HandoverCounts,
  type HandoverRow,
} from '../../../db/repos/handovers';
import { pageQuery } from '../../http/pagination';
import { exactlyOneOf, z } from '../../http/zod';
import { handoverAgentIds } from './incoming-schema';

const HANDOVER_STATES = ['running', 'completed', 'compensated', 'failed'] as const;

export const createHandoverBody = z
  .object({
    peerId: z.uuid().transform((id) => id.toLowerCase()),
    agentIds: handoverAgentIds(1).optional().openapi({ description: 'The agents to hand over (or give `groupId`).' }),
    groupId: z
      .uuid()
      .transform((id) => id.toLowerCase())
      .optional()
      .openapi({ description: 'Hand over every agent of this group that can be (or give `agentIds`).' }),
    deadlineSeconds: z.number().int().min(10).max(86_400).optional().openapi({
      description:
        'How long the receiver has to see the agents before the rest are compensated (default Federation:HandoverDeadlineSeconds).',
    }),
  })
  .strict()
  .refine((body) => (body.agentIds === undefined) !== (body.groupId === undefined), {
    message: 'give exactly one of agentIds and groupId',
  })
  .openapi('HandoverCreate', exactlyOneOf('agentIds', 'groupId'));

export const handoverId = z.object({ id: z.uuid().transform((id) => id.toLowerCase()) });

export const handoverListQuery = pageQuery.extend({ state: z.enum(HANDOVER_STATES).optional() }).strict();

export const handoverAgentsQuery = pageQuery.extend({ state: z.enum(HANDOVER_AGENT_STATES).optional() }).strict();

const countsSchema = z.object({
  total: z.number().int(),
  pending: z.number().int(),
  offered: z.number().int(),
  handedOver: z.number().int(),
  withdrawn: z.number().int(),
  missing: z
    .number()
    .int()
    .openapi({ description: 'Withdrawn, and not seen here since the offer: connected to neither installation.' }),
  skipped: z.number().int(),
});

export const handoverSchema = z
  .object({
    id: z.string(),
    peerId: z.string().nullable().openapi({ description: 'null once the peer was deleted (peerName stays).' }),
    peerName: z.string(),
    state: z.enum(HANDOVER_STATES),
    deadlineSeconds: z.number().int(),
    reason: z.string().nullable(),
    counts: countsSchema.openapi({ description: 'The handover’s agents in each state.' }),
    agents: z.string().openapi({ description: 'Where its agents and their states are listed, a page at a time.' }),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi('Handover');

export const handoverAgentSchema = z
  .object({
    agentId: z.string(),
    state: z.enum(HANDOVER_AGENT_STATES),
    error: z.string().nullable().openapi({ description: 'Why it was skipped, withdrawn or is missing.' }),
    updatedAt: z.string(),
  })
  .openapi('HandoverAgent');

export function presentCounts(counts: HandoverCounts): z.infer<typeof countsSchema> {
  const { pending, offered, withdrawn, missing, skipped } = counts;
  const handedOver = counts['handed-over'];
  return {
    total: pending + offered + handedOver + withdrawn + missing + skipped,
    pending,
    offered,
    handedOver,
    withdrawn,
    missing,
    skipped,
  };
}

export function presentHandover(row: HandoverRow, counts: HandoverCounts): z.infer<typeof handoverSchema> {
  return {
    id: row.id,
    peerId: row.peer_id,
    peerName: row.peer_name,
    state: row.state,
    deadlineSeconds: row.deadline_seconds,
    reason: row.reason,
    counts: presentCounts(counts),
    agents: `/api/federation/handovers/${row.id}/agents`,
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

export function presentHandoverAgent(row: HandoverAgentRow): z.infer<typeof handoverAgentSchema> {
  return { agentId: row.agent_id, state: row.state, error: row.error, updatedAt: row.updated_at.toISOString() };
}
