import type { Db } from '../../../db/connection';
import type { RolloutAgentListRow } from '../../../db/repos/rollout-agents';
import { type RolloutRow } from '../../../db/repos/rollouts';
import { labelsSchema } from '../../http/labels';
import { plainText } from '../../http/text';
import { rolloutSummaryView, rolloutView } from '../../../domain/rollout-view';
import { decimalQuery, exactlyOneOf, notAllEmpty, z } from '../../http/zod';
import {
  AGENT_ROLLOUT_STATES,
  DEFAULT_LATE_ARRIVAL_SECONDS,
  DEFAULT_MAX_DISCONNECTS,
  MAX_LATE_ARRIVAL_SECONDS,
  OFFLINE_AGENT_MODES,
  ROLLOUT_STATES,
} from '../../../domain/rollouts';
import { isTimeZone, WEEKDAYS } from '../../../domain/rollout-windows';

const MAX_TARGET_IDS = 10_000;
/** How far ahead a rollout may be scheduled. */
const MAX_START_AHEAD_MS = 366 * 86_400_000;

export const targetSchema = z
  .object({
    groupIds: z.array(z.uuid()).max(MAX_TARGET_IDS).default([]),
    agentIds: z.array(z.guid()).max(MAX_TARGET_IDS).default([]),
    labelSelector: labelsSchema
      .refine(
        (labels) => Object.keys(labels).length > 0,
        'must name at least one label (an empty selector would match every agent)',
      )
      .openapi({ minProperties: 1 })
      .nullable()
      .default(null)
      .openapi({ description: 'Agents whose labels include every pair.' }),
  })
  .strict()
  .refine(
    (t) => t.groupIds.length > 0 || t.agentIds.length > 0 || t.labelSelector !== null,
    'name at least one group, agent or label selector',
  )
  .openapi('RolloutTarget', {
    ...notAllEmpty({ groupIds: { maxItems: 0 }, agentIds: { maxItems: 0 }, labelSelector: { type: 'null' } }),
    description:
      'Agents in any of the groups, the agents listed, and agents matching the label selector (union). Agents that join a target group or start matching while the rollout runs are included in a later batch.',
  });

/** A batch as a number of agents, or as a percentage of the target (fractions allowed). */
export const batchSizeSchema = z.number().int().min(1).max(1_000_000);
export const batchPercentSchema = z.number().min(0.01).max(100);

export const healthGateSchema = z
  .object({
    unhealthyAfterSeconds: z.number().int().min(1).max(86_400).openapi({
      description:
        'An agent that applied the version and then reports unhealthy (OpAMP ComponentHealth) for this long during the bake fails in its batch.',
    }),
    maxDisconnects: z.number().int().min(0).max(1000).default(DEFAULT_MAX_DISCONNECTS).openapi({
      description:
        'An agent whose connection drops more often than this during the bake fails in its batch (default 3).',
    }),
  })
  .strict()
  .openapi('RolloutHealthGate', {
    description:
      "During each batch's bake, agents that applied the version and then turn unhealthy or keep disconnecting count as failures of the batch; `maxFailurePercent` and `onFailure` then act as for any failure. Absent: the bake only waits.",
  });

const clockTime = z.string().regex(/^(([01]\d|2[0-3]):[0-5]\d|24:00)$/, 'must be a local time HH:MM, 00:00 to 24:00');

export const windowSchema = z
  .object({
    days: z
      .array(z.enum(WEEKDAYS))
      .min(1)
      .max(7)
      .refine((days) => new Set(days).size === days.length, 'must not name a day twice'),
    from: clockTime,
    to: clockTime,
    timeZone: z
      .string()
      .max(64)
      .refine(isTimeZone, 'must be an IANA time zone, e.g. Europe/Berlin or UTC')
      .openapi({ example: 'Europe/Berlin' }),
  })
  .strict()
  .refine((w) => w.from !== w.to, { path: ['to'], message: 'must differ from from (a window of no time)' })
  .openapi('RolloutWindow', {
    description:
      'Opens on each of `days` at `from` (local time in `timeZone`) and closes at `to` that day, or the next day when `to` is not after `from` (22:00–04:00 runs overnight).',
  });

export const strategySchema = z
  .object({
    batchSize: batchSizeSchema.optional(),
    batchPercent: batchPercentSchema.optional(),
    bakeSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .default(0),
    applyTimeoutSeconds: z.number().int().min(1).max(86_400).default(300),
    maxFailurePercent: z.number().min(0).max(100).default(0),
    onFailure: z.enum(['pause', 'rollback']).default('pause'),
    offlineAgents: z.enum(OFFLINE_AGENT_MODES).default('defer').openapi({
      description:
        'An agent offline when its batch is pushed: `defer` (it gets the version when it connects and settles then; it neither fails nor blocks the batch), `skip` (settled `skipped`), or `fail` (it fails once `applyTimeoutSeconds` passed).',
    }),
    lateArrivalSeconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_LATE_ARRIVAL_SECONDS)
      .default(DEFAULT_LATE_ARRIVAL_SECONDS)
      .openapi({
        description:
          'How long a completed rollout keeps delivering to its deferred agents (default 7 days, at most 30); after it they are settled `skipped` and no longer get the version.',
      }),
    healthGate: healthGateSchema.optional(),
    windows: z.array(windowSchema).min(1).max(50).optional().openapi({
      description:
        'When batches may start: a batch starts only inside one of the windows, and a batch that started finishes (its bake too). Absent: any time.',
    }),
  })
  .strict()
  .refine(
    (s) => (s.batchSize === undefined) !== (s.batchPercent === undefined),
    'give exactly one of batchSize and batchPercent',
  )
  .refine((s) => !s.healthGate || s.healthGate.unhealthyAfterSeconds <= s.bakeSeconds, {
    path: ['healthGate', 'unhealthyAfterSeconds'],
    message: 'must not exceed bakeSeconds: the gate watches agents only while their batch bakes',
  })
  .openapi('RolloutStrategy', exactlyOneOf('batchSize', 'batchPercent'));

export const createRolloutBody = z
  .object({
    name: plainText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'What operators call the rollout: shown in lists, events and the Temporal UI.' }),
    description: z
      .string()
      .max(2000)
      .optional()
      .openapi({ description: 'Why this change is made: shown with the rollout, in its events and the Temporal UI.' }),
    configurationId: z.uuid(),
    version: z.number().int().min(1).max(2_147_483_647),
    target: targetSchema,
    strategy: strategySchema,
    startAt: z.iso
      .datetime({ offset: true })
      .refine((at) => Date.parse(at) > Date.now(), 'must be in the future')
      .refine((at) => Date.parse(at) <= Date.now() + MAX_START_AHEAD_MS, 'must be within a year')
      .optional()
      .openapi({
        description:
          'RFC 3339. The start is accepted at once, and the first batch is not pushed before then: until then the rollout is `scheduled` (pause and abort work).',
      }),
  })
  .strict()
  .openapi('RolloutCreate');

export const progressSchema = z.object({
  total: z.number().int(),
  pending: z.number().int(),
  applying: z.number().int(),
  deferred: z
    .number()
    .int()
    .openapi({ description: 'Offline when their batch was pushed; they settle when they connect.' }),
  succeeded: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
});

export const rollbackProgressSchema = z.object({
  pending: z.number().int(),
  applying: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
});

export const rolloutSchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    description: z.string().nullable(),
    configurationId: z.string(),
    version: z.number().int(),
    contentHash: z.string(),
    target: z.object({
      groupIds: z.array(z.string()),
      agentIds: z.array(z.string()),
      labelSelector: z.record(z.string(), z.string()).nullable(),
    }),
    strategy: z.object({
      batchSize: z.number().int().optional(),
      batchPercent: z.number().optional(),
      bakeSeconds: z.number().int(),
      applyTimeoutSeconds: z.number().int(),
      maxFailurePercent: z.number(),
      onFailure: z.enum(['pause', 'rollback']),
      offlineAgents: z.enum(OFFLINE_AGENT_MODES),
      lateArrivalSeconds: z.number().int(),
      healthGate: z.object({ unhealthyAfterSeconds: z.number().int(), maxDisconnects: z.number().int() }).optional(),
      windows: z
        .array(z.object({ days: z.array(z.enum(WEEKDAYS)), from: z.string(), to: z.string(), timeZone: z.string() }))
        .optional(),
    }),
    startAt: z.string().nullable().openapi({ description: 'Not before then is the first batch pushed.' }),
    nextWindowAt: z.string().nullable().openapi({
      description:
        'A running rollout with windows, outside them: when the next opens (its next batch starts then). Null otherwise.',
    }),
    state: z.enum(ROLLOUT_STATES),
    reason: z.string().nullable(),
    progress: progressSchema,
    currentBatch: z.number().int(),
    batches: z.array(progressSchema.extend({ batch: z.number().int() })),
    rollback: rollbackProgressSchema.nullable().openapi({ description: 'Progress of the rollback, once one started.' }),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .openapi('Rollout');

export const rolloutSummarySchema = rolloutSchema
  .omit({ progress: true, batches: true, rollback: true })
  .openapi('RolloutSummary');

export const rolloutListQuery = z.object({
  state: z.enum(ROLLOUT_STATES).optional(),
  configurationId: z.uuid().optional(),
  createdBy: z.string().min(1).max(200).optional(),
  q: z.string().min(1).max(200).optional().openapi({ description: 'Part of the name (case-insensitive).' }),
});

export const ROLLOUT_AGENT_STATES = AGENT_ROLLOUT_STATES;

export const rolloutAgentQuery = z.object({
  state: z.enum(ROLLOUT_AGENT_STATES).optional(),
  batch: decimalQuery(1, 2_147_483_647).optional(),
});

export const rolloutAgentSchema = z
  .object({
    agentId: z.string(),
    agentName: z.string().nullable().openapi({ description: "The agent's name (null when the agent is gone)." }),
    batch: z.number().int().nullable(),
    state: z.enum(ROLLOUT_AGENT_STATES),
    error: z.string().nullable(),
    previous: z.object({ configurationId: z.string(), version: z.number().int() }).nullable(),
    rollback: z.object({ state: z.string(), error: z.string().nullable() }).nullable(),
    pushedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .openapi('RolloutAgent');

const iso = (date: Date | null) => date?.toISOString() ?? null;

// The rollout's bodies are the domain's view, which `rollout.created` carries too
// (domain/rollout-view.ts); typed here against the schemas so the two cannot drift.
export const presentRolloutSummary: (row: RolloutRow) => z.infer<typeof rolloutSummarySchema> = rolloutSummaryView;
export const presentRollout: (db: Db, row: RolloutRow) => Promise<z.infer<typeof rolloutSchema>> = rolloutView;

export function presentRolloutAgent(row: RolloutAgentListRow): z.infer<typeof rolloutAgentSchema> {
  return {
    agentId: row.agent_id,
    agentName: row.agent_name,
    batch: row.batch,
    state: row.state,
    error: row.error,
    previous:
      row.previous_configuration_id && row.previous_version !== null
        ? { configurationId: row.previous_configuration_id, version: row.previous_version }
        : null,
    rollback: row.rollback_state ? { state: row.rollback_state, error: row.rollback_error } : null,
    pushedAt: iso(row.pushed_at),
    finishedAt: iso(row.finished_at),
  };
}
