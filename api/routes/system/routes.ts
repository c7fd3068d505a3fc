import type { Knex } from 'knex';
import type { Registry } from 'prom-client';
import { ping } from '../../../db/connection';
import { catalogue, problems, type ProblemSlug } from '../../problems';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';

export interface Readiness {
  db: Knex;
  /** Resolves when Temporal answers its health check; absent when no Temporal is wired. */
  temporalHealthy?: () => Promise<void>;
  draining: () => boolean;
}

const errorType = z.object({ slug: z.string(), status: z.number().int(), title: z.string(), description: z.string() });

async function check(name: string, probe: () => Promise<unknown>): Promise<[string, string]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), 2000);
  });
  try {
    await Promise.race([probe(), timeout]);
    return [name, 'ok'];
  } catch {
    return [name, 'unreachable'];
  } finally {
    clearTimeout(timer);
  }
}

export function systemRoutes(readiness: Readiness, metrics: Registry): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/healthz',
      summary: 'Liveness: the process is running',
      tag: 'system',
      permission: 'public',
      response: { status: 200, description: 'Alive.', schema: z.object({ status: z.literal('ok') }) },
      handler: async () => ({ body: { status: 'ok' } }),
    }),
    route({
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: Postgres and Temporal are reachable and the process is not shutting down',
      tag: 'system',
      permission: 'public',
      response: {
        status: 200,
        description: 'Ready.',
        schema: z.object({ status: z.literal('ready'), checks: z.record(z.string(), z.string()) }),
      },
      handler: async () => {
        if (readiness.draining()) throw problems.unavailable('The service is shutting down.');
        const checks = Object.fromEntries(
          await Promise.all([
            check('postgres', () => ping(readiness.db)),
            ...(readiness.temporalHealthy ? [check('temporal', readiness.temporalHealthy)] : []),
          ]),
        );
        const down = Object.entries(checks)
          .filter(([, state]) => state !== 'ok')
          .map(([name]) => name);
        if (down.length > 0) throw problems.unavailable(`Unreachable: ${down.join(', ')}.`);
        return { body: { status: 'ready', checks } };
      },
    }),
    route({
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics',
      tag: 'system',
      permission: 'public',
      response: {
        status: 200,
        description: 'Prometheus text exposition.',
        schema: z.string(),
        contentType: 'text/plain',
      },
      handler: async ({ ctx }) => {
        ctx.type = metrics.contentType;
        return { body: await metrics.metrics() };
      },
    }),
    route({
      method: 'get',
      path: '/errors',
      summary: 'Every error type the API can answer with',
      tag: 'system',
      permission: 'public',
      response: { status: 200, description: 'The catalogue.', schema: z.object({ items: z.array(errorType) }) },
      handler: async () => ({
        body: { items: Object.entries(catalogue).map(([slug, t]) => ({ slug, ...t })) },
      }),
    }),
    route({
      method: 'get',
      path: '/errors/{slug}',
      summary: 'Describe one error type (the target of a problem’s `type`)',
      tag: 'system',
      permission: 'public',
      params: z.object({ slug: z.string() }),
      response: { status: 200, description: 'The error type.', schema: errorType },
      handler: async ({ params }) => {
        if (!Object.hasOwn(catalogue, params.slug)) throw problems.notFound('error type', params.slug);
        return { body: { slug: params.slug, ...catalogue[params.slug as ProblemSlug] } };
      },
    }),
  ];
}
