/**
 * The agent gateway measured by bench/agent-gateway.ts, alone in its own process, so that
 * its resident memory is the api's: settings from the environment, V8's heap pool released
 * after peaks (platform/heap-pool.ts), `createAgentGateway`, listen on Agents:Listen. Sends
 * `{ type: 'listening', port }` over IPC once listening and answers `{ type: 'stats', reset? }`
 * with its memory (peak RSS sampled every second), CPU time, event-loop delay since the last
 * reset, the number of live WebSocket sessions, and the TLS handshakes it completed (how many
 * resumed a session). With BENCH_QUERIES=1, a reset also prints to stderr the statements sent
 * since the last one, by their first 90 characters, most frequent first.
 * `{ type: 'stop' }` stops the replica as the api does (the listener's close(), agents still
 * connected), closes its pool, answers `{ type: 'stopped', closeMs, stopMs }` (by its own
 * clock: the close(), and until it exits) and exits.
 */
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { createAgentGateway, listenAddress } from '../gateway/gateway';
import { loadSettings } from '../platform/settings';
import { releaseHeapPoolAfterPeaks } from '../platform/heap-pool';
import { createDb } from '../db/connection';

export interface GatewayStats {
  type: 'stats';
  rss: number;
  peakRss: number;
  heapUsed: number;
  /** Memory outside the V8 heap that V8 knows of (Buffers' and ArrayBuffers' contents among it). */
  external: number;
  arrayBuffers: number;
  /** TLS handshakes completed since the process started, and how many of them resumed a session. */
  handshakes: { total: number; resumed: number };
  /** CPU seconds (user + system) since the process started. */
  cpuSeconds: number;
  /** Event-loop delay since the last reset, ms. */
  loopDelay: { p50: number; p99: number; max: number };
  sessions: number;
  /** Releases of V8's pooled heap pages so far (platform/heap-pool.ts), and their time (ms). */
  heapPool: { releases: number; ms: number };
}

async function main() {
  const settings = loadSettings(process.env);
  const db = createDb(settings.database.url, settings.database.poolMax);
  const logger = pino({ level: settings.logLevel });
  const heapPool = releaseHeapPoolAfterPeaks({ logger }); // as api/main.ts does
  const gateway = await createAgentGateway({ db, logger, settings });
  const { host, port } = listenAddress(settings.agents.listen);
  const server = gateway.listener.server;
  await new Promise<void>((resolve) => server.listen({ port, host, backlog: 4096 }, resolve));

  const queries = new Map<string, number>();
  if (process.env.BENCH_QUERIES)
    db.on('query', (query: { sql: string }) => {
      const key = query.sql.replace(/\s+/g, ' ').slice(0, 90);
      queries.set(key, (queries.get(key) ?? 0) + 1);
    });
  const handshakes = { total: 0, resumed: 0 };
  server.on('secureConnection', (socket: TLSSocket) => {
    handshakes.total++;
    if (socket.isSessionReused()) handshakes.resumed++;
  });

  let peakRss = process.memoryUsage().rss;
  setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 1000).unref();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();

  process.on('message', (message: { type: string; reset?: boolean }) => {
    if (message.type === 'stop') return void stopTimed();
    if (message.type !== 'stats') return;
    if (process.env.BENCH_QUERIES && message.reset) {
      const top = [...queries].sort((a, b) => b[1] - a[1]).slice(0, 15);
      process.stderr.write(`queries since the last reset:\n${top.map(([sql, n]) => `  ${n} ${sql}`).join('\n')}\n`);
      queries.clear();
    }
    // BENCH_GC=1: collect garbage first, to tell memory still in use from garbage not yet collected.
    (globalThis as { gc?: () => void }).gc?.();
    const memory = process.memoryUsage();
    peakRss = Math.max(peakRss, memory.rss);
    const cpu = process.cpuUsage();
    const stats: GatewayStats = {
      type: 'stats',
      rss: memory.rss,
      peakRss,
      heapUsed: memory.heapUsed,
      external: memory.external,
      arrayBuffers: memory.arrayBuffers,
      handshakes: { ...handshakes },
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      loopDelay: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
      sessions: gateway.listener.sessions.byAgent.size,
      heapPool: { ...heapPool.stats },
    };
    if (message.reset) loop.reset();
    process.send!(stats);
  });
  async function stopTimed() {
    const started = performance.now();
    await gateway.listener.close();
    const closeMs = performance.now() - started;
    await db.destroy();
    process.send!({ type: 'stopped', closeMs, stopMs: performance.now() - started }, () => process.exit(0));
  }
  process.on('SIGTERM', () => {
    void gateway.listener
      .close()
      .catch(() => {})
      .finally(() => db.destroy().finally(() => process.exit(0)));
  });
  process.send!({ type: 'listening', port: (server.address() as AddressInfo).port });
}

main().catch((error: unknown) => {
  process.stderr.write(`agent gateway failed to start: ${(error as Error).stack}\n`);
  process.exit(1);
});
