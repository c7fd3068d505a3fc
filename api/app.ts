import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import Koa from 'koa';
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
import type { AppState } from './http/context';
import { dispatchByArea } from './http/dispatch';
import { routeMiddleware, type RouteDef } from './http/route';
import { jsonBody } from './middleware/json-body';
import { createRequestObserver } from './middleware/observe';
import { createProblemRenderer } from './middleware/problems';
import { serveConsole } from './middleware/console';
import { requestEnvelope } from './middleware/envelope';
import { openApiRoutes, swaggerRoutes } from './openapi/routes';
import { agentsRoutes } from './routes/agents/routes';
import { fleetRoutes } from './routes/fleet/routes';
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
import { createOutbound, type Outbound } from '../platform/outbound';
import { encryptionKey } from '../platform/secrets';
import { closeTemporalProbe } from '../platform/temporal';

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
  /** Where peers may be reached (default: the policy of Outbound:*, names resolved by the system). */
  outbound?: Outbound;
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

export async function createApp(deps: AppDeps): Promise<FleetApp> {
  const { settings, db, logger } = deps;
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });

  const audit = createAuditTrail(db, logger);
  const outbound = deps.outbound ?? createOutbound(settings.outbound, { logger });
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
    audit: audit.recordCall,
    trustProxy: settings.http.trustProxy,
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
    ...authRoutes({ sessions, signIn, publicBaseUrl: baseUrl }),
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
    ...fleetRoutes(),
    ...configurationsRoutes(resources),
    ...policiesRoutes(resources),
    ...tokensRoutes(resources),
    ...rolloutsRoutes({ ...resources, temporal: deps.temporal }),
    ...gitSourcesRoutes({ ...resources, workflows: gitSync }),
    ...gitWebhookRoutes({ settings, db, workflows: gitSync }),
    ...federationRoutes({ ...resources, temporal: deps.temporal, outbound }),
  );

  const services = {
    db,
    authenticate,
    recordAudit: audit.recordInTransaction,
    readBody: jsonBody(settings.http.maxBodyBytes),
  };
  const koa = new Koa<AppState>({ proxy: settings.http.trustProxy });
  koa.silent = true; // errors are rendered and logged by the envelope's problem renderer
  koa
    .use(
      requestEnvelope({
        problems: createProblemRenderer(logger, settings.errorsBaseUrl),
        audit: audit.recordAnswered,
        observe: createRequestObserver(logger, metrics),
      }),
    )
    .use(dispatchByArea(routes.map((def) => ({ ...def, middleware: routeMiddleware(def, services) }))))
    .use(serveConsole(deps.consoleDist));

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
      if (!deps.outbound) await outbound.close();
      if (deps.temporal) await closeTemporalProbe(deps.temporal);
    },
  };
}
