/**
 * Gives the pages V8 pools after a heap peak back to the system.
 *
 * From V8 13 (Node 24, the image's) the pages a full GC frees stay in a pool, mapped and
 * resident, until a memory-reducing GC, and V8 starts one by itself only while the process
 * allocates little (its memory reducer waits while allocation runs "high", which an api
 * answering heartbeats always does). A peak of the heap (10,000 agents enrolling, a push to
 * all of them) therefore stayed resident for the life of the process: at 4,000 agents the
 * gateway's heap was 100 MiB while 275 MiB of heap pages were resident (docs/performance.md,
 * the gateway's RSS). Node 20's V8 returned those pages at once.
 *
 * Every `sampleMs` this reads the heap V8 has committed; once that has fallen from the
 * highest seen since the last release by a third of that peak and by 64 MiB at least, one
 * last-resort GC (which releases the pool) runs, at most once a minute. A fall within that
 * minute is not forgotten: the release runs when the minute is over, even if the heap has
 * grown again meanwhile (the pages freed at the fall stay pooled until then). Without that,
 * bench:gateway's reconnect storm, which falls within a minute of enrolment's release, kept
 * ~70 MiB resident for good (docs/capacity.md, G2).
 * That GC stops the event loop for as long as a full collection takes (0.25–0.3 s in
 * bench:gateway at 4,000 and 10,000 agents), so it answers falls after peaks, not the heap's
 * ordinary rise and fall between collections, and not on a timer.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from 'pino';

export interface HeapPoolOptions {
  logger: Logger;
  /** How often the committed heap is read (default 2 s: a peak lasts until a full GC). */
  sampleMs?: number;
  /** The least time between two releases (default MIN_INTERVAL_MS; tests shorten it). */
  minIntervalMs?: number;
}

export interface HeapPoolRelease {
  stop(): void;
  /** Releases so far, and the time they took (ms). */
  readonly stats: { releases: number; ms: number };
}

const MiB = 1024 * 1024;
/** The least fall below the peak that releases the pool. */
const MIN_FALL_BYTES = 64 * MiB;
/** The least time between two releases. */
const MIN_INTERVAL_MS = 60_000;

export function releaseHeapPoolAfterPeaks(options: HeapPoolOptions): HeapPoolRelease {
  const sampleMs = options.sampleMs ?? 2000;
  const minIntervalMs = options.minIntervalMs ?? MIN_INTERVAL_MS;
  const stats = { releases: 0, ms: 0 };
  let lastRelease = -Infinity;
  const collect = memoryReducingGc();
  const committed = () => v8.getHeapStatistics().total_heap_size;
  let peak = committed();
  let releasing = false;
  /** A fall that asks for a release has been seen since the last one. */
  let owed = false;

  const timer = setInterval(() => {
    if (releasing) return;
    const now = committed();
    peak = Math.max(peak, now);
    const fall = peak - now;
    if (fall >= MIN_FALL_BYTES && fall >= peak / 3) owed = true;
    if (!owed || performance.now() - lastRelease < minIntervalMs) return;
    owed = false;
    releasing = true;
    const rssBefore = process.memoryUsage.rss();
    const started = performance.now();
    collect()
      .then(() => {
        peak = committed();
        lastRelease = performance.now();
        const ms = lastRelease - started;
        stats.releases++;
        stats.ms += ms;
        options.logger.info(
          {
            rssBeforeMiB: Math.round(rssBefore / MiB),
            rssAfterMiB: Math.round(process.memoryUsage.rss() / MiB),
            ms: Math.round(ms),
          },
          "released V8's pooled heap pages after a peak",
        );
      })
      .catch((error: unknown) => options.logger.warn({ err: error }, "releasing V8's pooled heap pages failed"))
      .finally(() => (releasing = false));
  }, sampleMs);
  timer.unref();
  return { stop: () => clearInterval(timer), stats };
}

type GcFunction = (options: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => Promise<void>;

/**
 * V8's `gc` without `--expose-gc` on the command line: a context made while the flag is on
 * has it as a global; the flag is off again before anything else can make a context.
 */
function memoryReducingGc(): () => Promise<void> {
  v8.setFlagsFromString('--expose-gc');
  let gc: GcFunction;
  try {
    gc = vm.runInNewContext('gc') as GcFunction;
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
  return () => gc({ type: 'major', execution: 'async', flavor: 'last-resort' });
}
