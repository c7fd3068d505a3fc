import { createAgentGateway, listenAddress } from '../gateway/gateway';
import { createDb } from '../db/connection';
import { createApp } from './app';
import { httpServer } from './http/server';
import { releaseHeapPoolAfterPeaks } from '../platform/heap-pool';
import { createLogger } from '../platform/logger';
import { loadSettingsOrExit } from '../platform/settings';
import { createTemporal } from '../platform/temporal';

async function main() {
  const settings = loadSettingsOrExit();
  const logger = createLogger(settings, 'api');
  releaseHeapPoolAfterPeaks({ logger });
  const db = createDb(settings.database.url, settings.database.poolMax);
  const temporal = createTemporal(settings);
  const app = await createApp({ settings, db, logger, temporal: temporal.client, temporalHealthy: temporal.healthy });
  // The agent port first: once /readyz answers, the agents' CA exists and agents can connect.
  const gateway = await createAgentGateway({ db, logger, settings });
  const agents = gateway.listener;
  const { host, port } = listenAddress(settings.agents.listen);
  await new Promise<void>((resolve) => agents.server.listen(port, host, resolve));
  logger.info(
    {
      listen: settings.agents.listen,
      path: '/v1/opamp',
      tls: gateway.tls !== undefined,
      terminatedBy: settings.agents.tls.terminatedBy,
      enrollment: settings.agents.enrollment.mode,
    },
    gateway.tls
      ? 'agent listener (OpAMP over TLS, client certificates accepted)'
      : settings.agents.tls.terminatedBy.length > 0
        ? "agent listener (OpAMP over HTTP from the proxies that end agents' TLS)"
        : 'agent listener (OpAMP, plain TCP: Development only)',
  );

  const server = httpServer(app, settings.errorsBaseUrl);
  server.keepAliveTimeout = 65_000; // longer than common load-balancer idle timeouts
  await new Promise<void>((resolve) => server.listen(settings.http.port, settings.http.host, resolve));
  logger.info(
    { url: settings.http.publicBaseUrl, port: settings.http.port, environment: settings.environment },
    'api listening',
  );

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // Agents are not drained: their sockets close at once (1001) and they reconnect to another
    // replica, while the API below waits for load balancers and in-flight requests.
    const agentsClosed = agents
      .close()
      .catch((error: unknown) => logger.error({ err: error }, 'closing the agent listener failed'));
    // Readiness turns 503 first, so load balancers stop routing here before we stop listening.
    app.drain();
    await new Promise((resolve) => setTimeout(resolve, settings.http.shutdownDelaySeconds * 1000));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const deadline = setTimeout(() => {
      logger.warn('shutdown timeout: closing remaining connections');
      server.closeAllConnections();
    }, settings.http.shutdownTimeoutSeconds * 1000);
    await closed;
    clearTimeout(deadline);
    await agentsClosed;
    await app.close();
    await temporal.connection.close().catch(() => {});
    await db.destroy();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`api failed to start: ${(error as Error).message}\n`);
  process.exit(1);
});
