import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { releaseHeapPoolAfterPeaks } from '../platform/heap-pool';
import { createLogger } from '../platform/logger';
import { loadSettingsOrExit } from '../platform/settings';
import { createDb } from '../db/connection';
import { startWorker } from './run';

async function main() {
  const settings = loadSettingsOrExit();
  const logger = createLogger(settings, 'worker');
  // The SDK's own log lines join ours as JSON.
  const sdk = logger.child({ component: 'temporal-sdk' });
  const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
    TRACE: 'trace',
    DEBUG: 'debug',
    INFO: 'info',
    WARN: 'warn',
    ERROR: 'error',
  };
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => sdk[levels[entry.level]](entry.meta ?? {}, entry.message)),
    shutdownSignals: [], // we decide when to stop, below
  });
  releaseHeapPoolAfterPeaks({ logger });
  const db = createDb(settings.database.url, settings.database.poolMax);
  const { worker, connection, running } = await startWorker(settings, db, { logger });
  logger.info({ taskQueue: settings.temporal.taskQueue, address: settings.temporal.address }, 'worker running');
  const stop = (signal: string) => {
    if (worker.getState() !== 'RUNNING') return;
    logger.info({ signal }, 'worker shutting down: finishing running activities');
    worker.shutdown();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await running;
  await connection.close();
  await db.destroy();
  logger.info('worker stopped');
}

main().catch((error: unknown) => {
  process.stderr.write(`worker failed: ${(error as Error).message}\n`);
  process.exit(1);
});
