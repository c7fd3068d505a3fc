/**
 * Many callers' requests of one kind answered by one call (one statement, one transaction):
 * a batch goes at the end of the event loop's turn in which its first request came, or as
 * soon as a place is free, so at rest a request waits for nothing but that turn (a batch of
 * one), and under load the requests that arrive meanwhile go together. A batch holds at most
 * one request per key (a later one of the same key waits for the next batch, in order).
 * Batches of one kind start at least BATCH_SPACING_MS apart (BatchSpacing).
 */
export interface CoalescerOptions<In> {
  /** Requests in one batch at most. */
  maxBatch: number;
  /** Batches under way at once (each holds a pooled connection). */
  maxInFlight: number;
  /** Requests with the same key never share a batch. */
  keyOf: (input: In) => string;
}

/**
 * How far apart two batches of one kind start at the least. A batch that starts as soon as
 * the previous one answered carries only what came during one round trip: in a reconnect
 * storm of 10,000 agents (~600 a second, a round trip of 2-4 ms) that was 1-3 agents a
 * statement, some 8,300 commits, and at the 30 s heartbeat nearly one commit a heartbeat.
 * Spaced, a batch carries what came in this long; a request at rest (no batch of its kind
 * in this long) still goes at once (docs/performance.md, "Batches spaced").
 */
export const BATCH_SPACING_MS = 10;

/** Holds the start of a batch until BATCH_SPACING_MS after the previous one's start. */
export class BatchSpacing {
  private lastStart = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ms = BATCH_SPACING_MS) {}

  /** True, and the start recorded, when a batch may start now; else `retry` runs once it may. */
  mayStart(retry: () => void): boolean {
    const wait = this.lastStart + this.ms - performance.now();
    if (wait <= 0) {
      this.lastStart = performance.now();
      return true;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      retry();
    }, wait);
    return false;
  }
}

interface Waiting<In, Out> {
  input: In;
  resolve(output: Out): void;
  reject(error: unknown): void;
}

export class Coalescer<In, Out> {
  private queue: Array<Waiting<In, Out>> = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly spacing = new BatchSpacing();

  /** `run` answers its inputs in their order. */
  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    private readonly options: CoalescerOptions<In>,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Pumps once the event loop's current turn is done: the requests of every connection whose
   * I/O that turn handled go together (in a storm, many handshakes complete in one turn).
   */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      if (!this.spacing.mayStart(() => this.pump())) return;
      const batch = this.take();
      this.inFlight++;
      this.run(batch.map((waiting) => waiting.input))
        .then(
          (outputs) => batch.forEach((waiting, i) => waiting.resolve(outputs[i]!)),
          (error: unknown) => batch.forEach((waiting) => waiting.reject(error)),
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  /** Requests in queue order, one per key, up to maxBatch; the rest keep their order. */
  private take(): Array<Waiting<In, Out>> {
    const batch: Array<Waiting<In, Out>> = [];
    const keys = new Set<string>();
    const rest: Array<Waiting<In, Out>> = [];
    for (const waiting of this.queue) {
      const key = this.options.keyOf(waiting.input);
      if (batch.length < this.options.maxBatch && !keys.has(key)) {
        batch.push(waiting);
        keys.add(key);
      } else rest.push(waiting);
    }
    this.queue = rest;
    return batch;
  }
}
