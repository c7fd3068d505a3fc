/**
 * An agent's history as the API shows it (docs/rollouts.md, A history per agent): every push
 * to it, what it said, and what the rollout decided, with the rollout that did it.
 */
import type { AgentHistoryRow } from '../../../db/repos/agent-history';
import { AGENT_HISTORY_KINDS } from '../../../domain/rollouts';
import { z } from '../../http/zod';

export const agentHistoryEntrySchema = z
  .object({
    at: z.string(),
    kind: z.enum(AGENT_HISTORY_KINDS).openapi({
      description:
        "`pushed` (the version was sent), `deferred` (sent while the agent was offline), `applied`, `failed` (the agent reported FAILED; `detail` is its message), `timed-out`, `unhealthy` (the health gate), `denied` (a policy), `abandoned` (an abort), `skipped`; and the rollback's `rollback-pushed`, `rollback-applied`, `rollback-failed`, `rollback-skipped`.",
    }),
    rollout: z
      .object({
        id: z.string(),
        name: z.string().nullable(),
        createdBy: z.string().openapi({
          description: "Who created it: an operator, or a Git source (`git:<source name>`, a template's rollout).",
        }),
      })
      .nullable(),
    batch: z.number().int().nullable(),
    configurationId: z.string().nullable(),
    version: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The version this entry is about (a rollback's: the one restored)." }),
    contentHash: z.string().nullable(),
    detail: z
      .string()
      .nullable()
      .openapi({ description: "The agent's message, or why (a timeout, a policy, a health verdict)." }),
  })
  .openapi('AgentHistoryEntry');

export function presentHistoryEntry(row: AgentHistoryRow): z.infer<typeof agentHistoryEntrySchema> {
  return {
    at: row.at.toISOString(),
    kind: row.kind,
    rollout: row.rollout_id
      ? { id: row.rollout_id, name: row.rollout_name, createdBy: row.rollout_created_by ?? '' }
      : null,
    batch: row.batch,
    configurationId: row.configuration_id,
    version: row.version,
    contentHash: row.content_hash,
    detail: row.detail,
  };
}

/** Keyset pages of history by `seq`: an agent's newest first, one rollout's in order. */
export const historyKeys = (direction: 'asc' | 'desc') => ({
  columns: [{ column: 'h.seq', type: 'bigint' as const }],
  direction,
});
