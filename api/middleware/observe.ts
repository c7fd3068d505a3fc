import type { Logger } from 'pino';
import type { Metric, MetricValue, Registry } from 'prom-client';
import type { AppContext } from '../http/context';

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

interface Series {
  /** `http_requests_total` of this method, route and status. */
  requests: { labels: Record<string, string>; count: number };
  /** `http_request_duration_seconds` of this method and route (shared by its statuses). */
  duration: { labels: Record<string, string>; buckets: number[]; sum: number; count: number };
}

/**
 * The request metrics, kept as plain numbers per series and turned into prom-client's
 * values only when scraped. prom-client's own `inc` and `observe` check and hash the label
 * set on every call, even on a child bound to its labels (~2 µs a request). The text a
 * scrape returns is prom-client's: the registry formats these values as it formats its own
 * counters and histograms.
 */
function requestMetrics(registry: Registry) {
  // One series a method, status and route, found through maps keyed by the values the
  // request already holds (a key string built per request cost ~1 µs to build and hash).
  const series: Series[] = [];
  const byRoute = new Map<string, Map<number, Map<string, Series>>>();
  const durations = new Map<string, Series['duration']>();
  const metric = (name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue<string>[]) => ({
    name,
    help,
    type,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type, aggregator: 'sum' as const, values: values() }),
    reset: () => {
      series.length = 0;
      byRoute.clear();
      durations.clear();
    },
  });
  const metrics = [
    metric('http_requests_total', 'HTTP requests by method, route template and status.', 'counter', () =>
      series.map(({ requests }) => ({ labels: requests.labels, value: requests.count })),
    ),
    metric('http_request_duration_seconds', 'HTTP request duration by method and route template.', 'histogram', () =>
      [...durations.values()].flatMap((timed) => {
        const name = 'http_request_duration_seconds';
        let cumulative = 0;
        return [
          ...DURATION_BUCKETS.map((le, i) => {
            cumulative += timed.buckets[i]!;
            return { labels: { ...timed.labels, le }, value: cumulative, metricName: `${name}_bucket` };
          }),
          { labels: { ...timed.labels, le: '+Inf' }, value: timed.count, metricName: `${name}_bucket` },
          { labels: timed.labels, value: timed.sum, metricName: `${name}_sum` },
          { labels: timed.labels, value: timed.count, metricName: `${name}_count` },
        ];
      }),
    ),
  ];
  // The registry reads only a metric's name, type, help, get() and reset(): these are not
  // prom-client classes, whose constructors would hash labels on every call again.
  for (const one of metrics) registry.registerMetric(one as unknown as Metric);

  return function seriesOf(method: string, route: string, status: number): Series {
    let byStatus = byRoute.get(route);
    if (!byStatus) byRoute.set(route, (byStatus = new Map<number, Map<string, Series>>()));
    let byMethod = byStatus.get(status);
    if (!byMethod) byStatus.set(status, (byMethod = new Map<string, Series>()));
    let found = byMethod.get(method);
    if (!found) {
      const durationKey = `${method} ${route}`;
      let timed = durations.get(durationKey);
      if (!timed) {
        timed = { labels: { method, route }, buckets: DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 };
        durations.set(durationKey, timed);
      }
      found = { requests: { labels: { method, route, status: String(status) }, count: 0 }, duration: timed };
      byMethod.set(method, found);
      series.push(found);
    }
    return found;
  };
}

export function createRequestObserver(logger: Logger, registry: Registry) {
  const seriesOf = requestMetrics(registry);

  return function observeRequest(ctx: AppContext, started: bigint): void {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = ctx.state.route ?? 'unmatched';
    const { requests, duration } = seriesOf(ctx.method, route, ctx.status);
    requests.count += 1;
    duration.count += 1;
    duration.sum += seconds;
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) {
        duration.buckets[i]! += 1;
        break;
      }
    }
    if (!logger.isLevelEnabled('info')) return;
    logger.info(
      {
        requestId: ctx.state.requestId,
        method: ctx.method,
        path: ctx.path,
        route,
        status: ctx.status,
        ms: Math.round(seconds * 10000) / 10,
        tenant: ctx.state.principal?.tenantId,
        actor: ctx.state.principal?.name,
      },
      'request',
    );
  };
}
