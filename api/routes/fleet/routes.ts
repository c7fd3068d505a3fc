/**
 * The fleet at a glance (the console's overview): counts over the tenant's agents now, the
 * rollouts in flight with their progress, and agents online over the last days from the
 * worker's per-minute census (docs/console.md, "Overview").
 */
import { AGENT_STATUSES } from '../../../db/repos/agents';
import { agentCounts, configurationSpread, fleetIntervals } from '../../../db/repos/fleet';
import { rolloutProgress } from '../../../db/repos/rollout-agents';
import { listRolloutsQuery, type RolloutRow } from '../../../db/repos/rollouts';
import { decimalQuery, z } from '../../http/zod';
import { route, type RouteDef } from '../../http/route';
import { progressSchema, rollbackProgressSchema } from '../rollouts/schema';

/** Configurations shown one by one; the rest are summed. */
const CONFIGURATIONS_SHOWN = 10;
/** Rollouts in flight shown, the most recently started first. */
const ROLLOUTS_SHOWN = 10;
const IN_FLIGHT = ['scheduled', 'running', 'paused', 'rolling-back'] as const;

const count = () => z.number().int();

const summarySchema = z
  .object({
    agents: z.object({
      total: count(),
      byStatus: z.object(Object.fromEntries(AGENT_STATUSES.map((status) => [status, count()]))),
      health: z
        .object({ healthy: count(), unhealthy: count(), unknown: count() })
        .openapi({ description: 'Of the online agents, by their last ComponentHealth (`unknown`: none reported).' }),
      failedApplies: count().openapi({ description: 'Agents whose last configuration report is FAILED.' }),
      withoutConfiguration: count(),
    }),
    configurations: z
      .array(
        z.object({
          configurationId: z.string(),
          name: z.string(),
          publishedVersion: z
            .number()
            .int()
            .nullable()
            .openapi({ description: 'The newest published version: agents desiring an older one are behind.' }),
          agents: count(),
          versions: z
            .array(
              z.object({
                version: z.number().int(),
                agents: count(),
                applied: count().openapi({ description: 'Of them, agents that reported this version APPLIED.' }),
                failed: count().openapi({ description: 'Of them, agents that reported this version FAILED.' }),
              }),
            )
            .openapi({ description: 'Desired versions, newest first.' }),
        }),
      )
      .openapi({ description: `The ${CONFIGURATIONS_SHOWN} configurations most agents desire, most first.` }),
    otherConfigurations: z.object({ configurations: count(), agents: count() }),
    rollouts: z
      .array(
        z.object({
          id: z.string(),
          name: z.string().nullable(),
          state: z.enum(IN_FLIGHT),
          currentBatch: z.number().int(),
          progress: progressSchema,
          rollback: rollbackProgressSchema.nullable(),
        }),
      )
      .openapi({
        description: `Rollouts in flight (scheduled, running, paused, rolling back), the ${ROLLOUTS_SHOWN} newest.`,
      }),
  })
  .openapi('FleetSummary');

const onlineQuery = z
  .object({
    hours: decimalQuery(1, 168).default(24).openapi({ description: 'How far back (1–168 hours; default 24).' }),
    stepMinutes: decimalQuery(1, 60)
      .default(5)
      .openapi({ description: 'Minutes per interval (1–60; default 5), aligned to the hour.' }),
  })
  .strict();

const onlineSchema = z
  .object({
    from: z.string(),
    stepMinutes: z.number().int(),
    intervals: z
      .array(
        z.object({
          at: z.string().openapi({ description: "The interval's start." }),
          onlineMin: count(),
          onlineMax: count(),
          unhealthyMax: count().openapi({ description: 'Online agents reporting unhealthy, at most.' }),
          enrolled: count().openapi({
            description: 'Agents enrolled (online, offline or enrolling) at its last count.',
          }),
        }),
      )
      .openapi({ description: 'Oldest first; an interval without a count (no worker ran) is absent.' }),
  })
  .openapi('FleetOnline');

export function fleetRoutes(): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/fleet/summary',
      summary: 'The fleet at a glance: agents by status, health, configuration and version; rollouts in flight',
      tag: 'agents',
      permission: 'read',
      response: { status: 200, description: 'Counts as they are now.', schema: summarySchema },
      handler: async ({ db, principal }) => {
        const tenantId = principal.tenantId;
        const [agents, spread, inFlight] = await Promise.all([
          agentCounts(db, tenantId),
          configurationSpread(db, tenantId, CONFIGURATIONS_SHOWN),
          listRolloutsQuery(db, tenantId, {})
            .whereIn('state', IN_FLIGHT)
            .orderByRaw('started_at DESC NULLS LAST, created_at DESC')
            .limit(ROLLOUTS_SHOWN) as Promise<RolloutRow[]>,
        ]);
        const rollouts = await Promise.all(
          inFlight.map(async (row) => {
            const { progress, rollback } = await rolloutProgress(db, row.id);
            return {
              id: row.id,
              name: row.name,
              state: row.state as (typeof IN_FLIGHT)[number],
              currentBatch: row.current_batch,
              progress,
              rollback,
            };
          }),
        );
        return {
          body: { agents, configurations: spread.configurations, otherConfigurations: spread.others, rollouts },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/fleet/online',
      summary: "Agents online over the last hours, from the worker's per-minute census",
      tag: 'agents',
      permission: 'read',
      query: onlineQuery,
      response: { status: 200, description: 'The census in intervals.', schema: onlineSchema },
      handler: async ({ db, principal, query }) => {
        const from = new Date(Date.now() - query.hours * 3_600_000);
        const intervals = await fleetIntervals(db, principal.tenantId, from, query.stepMinutes);
        return {
          body: {
            from: from.toISOString(),
            stepMinutes: query.stepMinutes,
            intervals: intervals.map((one) => ({ ...one, at: one.at.toISOString() })),
          },
        };
      },
    }),
  ];
}
