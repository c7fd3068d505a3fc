import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import Koa from 'koa';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createAuditTrail } from './audit/trail';
import { createAuthenticator } from './auth/authenticate';
import { createOidcVerifier } from './auth/oidc';
import { createPatAuthenticator, PAT_CHANGES_CHANNEL } from './auth/pat-auth';
import { PgListener } from '../platform/pg-listener';
import type { AppContext, AppState } from './http/context';
import { routeMiddleware, type RouteDef } from './http/route';
import { jsonBody } from './middleware/json-body';
import { observeRequests } from './middleware/observe';
import { renderProblems } from './middleware/problems';
import { requestId } from './middleware/request-id';
import { openApiRoutes, swaggerRoutes } from './openapi/routes';
import { problems } from './problems';
import { agentsRoutes } from './routes/agents/routes';
import { auditRoutes } from './routes/audit/routes';
import { configurationsRoutes } from './routes/configurations/routes';
import { groupsRoutes } from './routes/groups/routes';
import { policiesRoutes } from './routes/policies/routes';
import { rolloutsRoutes } from './routes/rollouts/routes';
import { tokensRoutes } from './routes/tokens/routes';
import { patRoutes } from './routes/pats/routes';
import { systemRoutes } from './routes/system/routes';
import { tenantRoutes } from './routes/tenant/routes';
import type { Settings } from '../platform/settings';

export interface AppDeps {
  settings: Readonly<Settings>;
  db: Knex;
  logger: Logger;
  /** The Temporal client that routes start and signal workflows with. */
  temporal?: Client;
  /** Resolves when Temporal is healthy; readiness reports it. */
  temporalHealthy?: () => Promise<void>;
}

export interface FleetApp {
  koa: Koa<AppState>;
  routes: RouteDef[];
  /** Readiness turns 503 from now on, so load balancers stop sending new requests. */
  drain(): void;
  /** Flushes the audit queue and closes the LISTEN connection (the pool is the caller's). */
  close(): Promise<void>;
}

function toKoaPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** 405 with `Allow` when the path exists under another method; otherwise let 404 stand. */
function methodNotAllowed(router: Router) {
  return async function answerMethodNotAllowed(ctx: AppContext) {
    const matched = router.match(ctx.path, ctx.method);
    const allowed = [...new Set(matched.path.flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD');
    if (matched.path.length > 0 && !matched.route) throw problems.methodNotAllowed(ctx.method, allowed);
  };
}

export async function createApp(deps: AppDeps): Promise<FleetApp> {
  const { settings, db, logger } = deps;
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });

  const audit = createAuditTrail(db, logger);
  const pats = createPatAuthenticator(db);
  const listener = new PgListener(settings.database.url, logger, () => pats.evict());
  await listener.listen(PAT_CHANGES_CHANNEL, (id) => pats.evict(id));
  await listener.start();
  const oidc = settings.oidc ? createOidcVerifier(settings.oidc) : undefined;
  const authenticate = createAuthenticator(db, pats, oidc);

  let draining = false;
  const routes: RouteDef[] = [];
  const allRoutes = () => routes;
  const baseUrl = settings.http.publicBaseUrl;
  const resources = { settings, db, logger, baseUrl };
  routes.push(
    ...systemRoutes({ db, temporalHealthy: deps.temporalHealthy, draining: () => draining }, metrics),
    ...openApiRoutes(allRoutes, baseUrl),
    ...(settings.isDevelopment ? swaggerRoutes() : []),
    ...tenantRoutes(),
    ...patRoutes({
      defaultTtlDays: settings.pat.defaultTtlDays,
      baseUrl,
      routes: allRoutes,
      evict: (patId) => pats.evict(patId),
    }),
    ...auditRoutes(baseUrl),
    ...groupsRoutes(resources),
    ...agentsRoutes(resources),
    ...configurationsRoutes(resources),
    ...policiesRoutes(resources),
    ...tokensRoutes(resources),
    ...rolloutsRoutes({ ...resources, temporal: deps.temporal }),
  );

  // Paths are case-sensitive: `/API/TENANT` is no route (and so cannot slip past the audit).
  const router = new Router({ sensitive: true });
  const services = {
    db,
    authenticate,
    recordAudit: audit.recordInTransaction,
    parseBody: jsonBody(settings.http.maxBodyBytes),
  };
  for (const def of routes) router[def.method](toKoaPath(def.path), ...(routeMiddleware(def, services) as never[]));

  const koa = new Koa<AppState>({ proxy: settings.http.trustProxy });
  koa.silent = true; // errors are rendered and logged by renderProblems
  koa
    .use(requestId)
    .use(observeRequests(logger, metrics))
    .use(audit.middleware)
    .use(renderProblems(logger, settings.errorsBaseUrl))
    .use(router.routes() as never)
    .use(methodNotAllowed(router));

  return {
    koa,
    routes,
    drain: () => {
      draining = true;
    },
    close: async () => {
      await audit.flush();
      await listener.close();
    },
  };
}
