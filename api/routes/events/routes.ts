/**
 * `GET /api/events`: the hub's events for scripts that poll instead of holding a socket,
 * with the same filters and the same visibility rules (api/hub/event-types.ts).
 */
import { listEventsQuery, toCloudEvent, type EventRow } from '../../../db/repos/events';
import { hiddenPrefixes, TYPE_PATTERN, typeListPattern, unknownPattern } from '../../hub/event-types';
import { TRIMMED_SPACE } from '../../http/text';
import { resolveSince } from '../../hub/since';
import { issuedBy, pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { problems } from '../../problems';

const cloudEventSchema = z
  .object({
    specversion: z.literal('1.0'),
    id: z.string(),
    source: z.string(),
    type: z.string(),
    subject: z.string().optional(),
    rollout: z.string().optional().openapi({
      description:
        "CloudEvents extension attribute: the rollout the event belongs to (a rollout's own events, and each agent's `rollout.agent-updated`, whose subject is the agent).",
    }),
    time: z.string(),
    datacontenttype: z.literal('application/json'),
    tenant: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .openapi('CloudEvent');

const eventsQuery = pageQuery
  .extend({
    type: z
      .string()
      .max(1000)
      .optional()
      .openapi({
        description: 'Comma-separated event types or families: `rollout.*,agent.connected`; `*` (default) for all.',
        pattern: typeListPattern(TRIMMED_SPACE).source,
      }),
    subject: z.string().min(1).max(200).optional().openapi({ description: 'Only the events of one object (its id).' }),
    rollout: z
      .uuid()
      .optional()
      .openapi({ description: "Only one rollout's events: its own and its agents' (`rollout.agent-updated`)." }),
    after: z
      .uuid()
      .optional()
      .openapi({ description: 'Only events written after this one (the last id you saw).', ...issuedBy('items[].id') }),
    order: z.enum(['oldest', 'newest']).default('oldest').openapi({
      description:
        '`oldest` first (default: to follow, with `after`), or `newest` first (the latest events, one page, then older pages).',
    }),
  })
  .strict();

function typePatterns(list: string | undefined): string[] | undefined {
  if (list === undefined) return undefined;
  const patterns = list.split(',').map((each) => each.trim());
  const bad = patterns
    .map((pattern) =>
      TYPE_PATTERN.test(pattern) ? unknownPattern(pattern) : `${pattern || '(empty)'} is not a type pattern`,
    )
    .filter((why): why is string => why !== undefined);
  if (bad.length > 0) throw problems.validation(bad.map((message) => ({ path: 'query.type', message })));
  return patterns;
}

export function eventsRoutes(baseUrl: string, replayHours: number): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/events',
      summary: 'The tenant’s events, oldest first (the live-updates hub’s, for polling), or newest first',
      tag: 'events',
      permission: 'read',
      query: eventsQuery,
      response: { status: 200, description: 'A page of CloudEvents.', schema: pageOf(cloudEventSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const types = typePatterns(query.type);
        let afterSeq: number | undefined;
        if (query.after !== undefined) {
          const position = await resolveSince(db, principal.tenantId, query.after, replayHours);
          if (!position.ok) throw problems.validation([{ path: 'query.after', message: position.message }]);
          afterSeq = position.seq;
        }
        const filters = {
          types,
          subject: query.subject,
          rollout: query.rollout,
          afterSeq,
          hiddenTypePrefixes: hiddenPrefixes(principal),
        };
        const page = await paginate<EventRow>(listEventsQuery(db, principal.tenantId, filters).select('*'), query, {
          columns: [{ column: 'seq', type: 'bigint' }],
          direction: query.order === 'newest' ? 'desc' : 'asc',
        });
        return { body: respondPage(ctx, baseUrl, page, toCloudEvent) };
      },
    }),
  ];
}
