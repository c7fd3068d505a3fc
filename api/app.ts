import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import Koa, { type Next } from 'koa';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createAuditTrail } from './audit/trail';
import { createAuthenticator, createTokenAuthenticator } from './auth/authenticate';
import { createConsoleSessions } from './auth/console-session';
import { createConsoleSignIn } from './auth/console-sign-in';
import { LiveHub } from './hub/hub';
import { EVENTS_CHANNEL } from '../db/repos/events';
import { eventsRoutes } from './routes/events/routes';
import { createOidcVerifier } from './auth/oidc';
import { createPatAuthenticator, PAT_CHANGES_CHANNEL } from './auth/pat-auth';
import { PgListener } from '../platform/pg-listener';
import type { AppContext, AppState } from './http/context';
import { routeMiddleware, type RouteDef } from './http/route';
import { jsonBody } from './middleware/json-body';
import { observeRequests } from './middleware/observe';
import { renderProblems } from './middleware/problems';
import { serveConsole } from './middleware/console';
import { requestId } from './middleware/request-id';
import { openApiRoutes, swaggerRoutes } from './openapi/routes';
import { problems } from './problems';
import { agentsRoutes } from './routes/agents/routes';
import { auditRoutes } from './routes/audit/routes';
import { authRoutes } from './routes/auth/routes';
import { configurationsRoutes } from './routes/configurations/routes';
import { federationRoutes } from './routes/federation';
import { gitSourcesRoutes } from './routes/git-sources/routes';
import { gitWebhookRoutes } from './routes/git-sources/webhook';
import { GitSyncWorkflows } from './routes/git-sources/workflow-client';
import { groupsRoutes } from './routes/groups/routes';
import { policiesRoutes } from './routes/policies/routes';
import { rolloutsRoutes } from './routes/rollouts/routes';
import { tokensRoutes } from './routes/tokens/routes';
import { patRoutes } from './routes/pats/routes';
import { systemRoutes } from './routes/system/routes';
import { tenantRoutes } from './routes/tenant/routes';
import type { Settings } from '../platform/settings';
import { encryptionKey } from '../platform/secrets';

export interface AppDeps {
  settings: Readonly<Settings>;
  db: Knex;
  logger: Logger;
  /** The Temporal client that routes start and signal workflows with. */
  temporal?: Client;
  /** Resolves when Temporal is healthy; readiness reports it. */
  temporalHealthy?: () => Promise<void>;
  /** The built operator console served at `/` (default console/dist; tests name a missing one). */
  consoleDist?: string;
}

export interface FleetApp {
  koa: Koa<AppState>;
  routes: RouteDef[];
  /** Readiness turns 503 from now on, so load balancers stop sending new requests. */
  drain(): void;
  /** Live-updates subscribers connected to this replica. */
  liveSubscribers(): number;
  /** The HTTP server's `upgrade` handler: the live-updates hub (any other path is closed). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes the hub's subscribers (1001), flushes the audit queue and closes the LISTEN connection (the pool is the caller's). */
  close(): Promise<void>;
}

function toKoaPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** The methods of each path that a template without parameters serves (`/api/tenant`: GET, HEAD, PUT). */
function staticPathMethods(router: Router): Map<string, Set<string>> {
  const byPath = new Map<string, Set<string>>();
  for (const layer of router.stack) {
    if (layer.paramNames.length > 0 || typeof layer.path !== 'string') continue;
    const methods = byPath.get(layer.path) ?? new Set<string>();
    for (const method of layer.methods) methods.add(method);
    byPath.set(layer.path, methods);
  }
  return byPath;
}

/**
 * 405 with `Allow` when the path exists under other methods only. The most specific
 * templates matching the path decide (fewest parameters): `PUT /api/policies/evaluate`
 * is a 405 for the static `/api/policies/evaluate`, not a `PUT /api/policies/{id}` with a
 * bad id. Runs before the router, so no other route gets to answer first.
 *
 * router.match tests every route's pattern, a few µs on each call: a path that a static
 * template serves under this method is as specific as a path can be, so it skips the match.
 */
function methodNotAllowed(router: Router) {
  const staticPaths = staticPathMethods(router);
  return async function answerMethodNotAllowed(ctx: AppContext, next: Next) {
    if (staticPaths.get(ctx.path)?.has(ctx.method)) {
      await next();
      return;
    }
    const layers = router.match(ctx.path, ctx.method).path;
    const fewestParams = Math.min(...layers.map((layer) => layer.paramNames.length));
    const specific = layers.filter((layer) => layer.paramNames.length === fewestParams);
    const methods = new Set(specific.flatMap((layer) => layer.methods));
    if (specific.length > 0 && !methods.has(ctx.method)) {
      throw problems.methodNotAllowed(
        ctx.method,
        [...methods].filter((m) => m !== 'HEAD'),
      );
    }
    await next();
  };
}

/**
 * A request whose body has not fully arrived when the answer is ready (refused before the
 * body was needed: 401, 404, 405, 415, or a 413 that stopped reading) gets
 * `Connection: close`. Otherwise Node reads and discards the rest to keep the connection
 * alive, however large it is (a 4 GB upload would stream into a 401).
 */
async function closeUnreadBodies(ctx: AppContext, next: Next) {
  try {
    await next();
  } finally {
    if (!ctx.req.complete) ctx.set('Connection', 'close');
  }
}

export async function createApp(deps: AppDeps): Promise<FleetApp> {
  const { settings, db, logger } = deps;
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });

  const audit = createAuditTrail(db, logger);
  const pats = createPatAuthenticator(db);
  const oidc = settings.oidc ? createOidcVerifier(settings.oidc) : undefined;
  const authenticateToken = createTokenAuthenticator(db, pats, oidc);
  const key = encryptionKey(settings);
  const sessions = createConsoleSessions(db, { ...settings, key });
  const signIn = settings.oidc ? createConsoleSignIn(settings.oidc, { ...settings, key }) : undefined;
  const authenticate = createAuthenticator(authenticateToken, sessions);
  const hub = new LiveHub({
    db,
    logger,
    authenticateToken,
    sessions,
    publicBaseUrl: settings.http.publicBaseUrl,
    errorsBaseUrl: settings.errorsBaseUrl,
    replayHours: settings.events.replayHours,
    maxBufferedBytes: settings.events.subscriberBufferBytes,
    heartbeatMs: settings.events.heartbeatSeconds * 1000,
  });
  // Notifications sent while the LISTEN connection was down are lost: forget every cached
  // PAT, and send live subscribers off to reconnect with `since`, which replays what they missed.
  const listener = new PgListener(settings.database.url, logger, () => {
    pats.evict();
    hub.restart();
  });
  await listener.listen(PAT_CHANGES_CHANNEL, (id) => {
    pats.evict(id);
    void hub.recheck(id);
  });
  await listener.listen(EVENTS_CHANNEL, (id) => hub.announced(id));
  await listener.start();

  let draining = false;
  const routes: RouteDef[] = [];
  const allRoutes = () => routes;
  const baseUrl = settings.http.publicBaseUrl;
  const resources = { settings, db, logger, baseUrl };
  const gitSync = new GitSyncWorkflows(deps.temporal, settings);
  routes.push(
    ...systemRoutes({ db, temporalHealthy: deps.temporalHealthy, draining: () => draining }, metrics),
    ...openApiRoutes(allRoutes, baseUrl),
    ...(settings.isDevelopment ? swaggerRoutes() : []),
    ...authRoutes({ sessions, signIn }),
    ...tenantRoutes(),
    ...patRoutes({
      defaultTtlDays: settings.pat.defaultTtlDays,
      baseUrl,
      routes: allRoutes,
      evict: (patId) => pats.evict(patId),
    }),
    ...auditRoutes(baseUrl),
    ...eventsRoutes(baseUrl, settings.events.replayHours),
    ...groupsRoutes(resources),
    ...agentsRoutes(resources),
    ...configurationsRoutes(resources),
    ...policiesRoutes(resources),
    ...tokensRoutes(resources),
    ...rolloutsRoutes({ ...resources, temporal: deps.temporal }),
    ...gitSourcesRoutes({ ...resources, workflows: gitSync }),
    ...gitWebhookRoutes({ settings, db, workflows: gitSync }),
    ...federationRoutes({ ...resources, temporal: deps.temporal }),
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
    .use(closeUnreadBodies)
    .use(requestId)
    .use(observeRequests(logger, metrics))
    .use(audit.middleware)
    .use(renderProblems(logger, settings.errorsBaseUrl))
    .use(serveConsole(deps.consoleDist))
    .use(methodNotAllowed(router))
    .use(router.routes() as never);

  return {
    koa,
    routes,
    drain: () => {
      draining = true;
    },
    liveSubscribers: () => hub.size,
    upgrade: (req, socket, head) => {
      if (!hub.handleUpgrade(req, socket, head)) socket.destroy();
    },
    close: async () => {
      await hub.close();
      await audit.flush();
      await listener.close();
    },
  };
}
