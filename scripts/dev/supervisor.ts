/**
 * The part of `npm run dev` that keeps the api and the worker running: each is a child
 * process restarted with exponential back-off when it exits without being asked to; Ctrl-C
 * or SIGTERM stops the children first, then whatever `afterChildren` registered (Temporal,
 * Postgres). Their output goes through `formatLine` (readable lines, see pretty-log.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ServiceSpec {
  /** Shown in every line about it: `api`, `worker`. */
  name: string;
  /** Arguments to `node` (e.g. `--import tsx api/main.ts`). */
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
}

export interface Backoff {
  /** Delay before the first restart. */
  firstMs: number;
  /** The delay doubles after each crash up to this. */
  maxMs: number;
  /** A process that stayed up this long counts as healthy again: the next delay is `firstMs`. */
  stableMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { firstMs: 1_000, maxMs: 30_000, stableMs: 60_000 };

export interface SupervisorOptions {
  backoff?: Backoff;
  /** One line about the supervisor's own work (`[dev] …`). */
  log: (line: string) => void;
  /** One line of a child's stdout or stderr, already split; prints it. */
  output: (service: string, line: string) => void;
  /** How long a child may take to stop after SIGTERM before it is killed. */
  stopTimeoutMs?: number;
}

/** The delay before restart number `crashes` (1, 2, …): firstMs doubling, capped at maxMs. */
export function restartDelayMs(backoff: Backoff, crashes: number): number {
  return Math.min(backoff.maxMs, backoff.firstMs * 2 ** (crashes - 1));
}

export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `killed by ${signal}` : `exit code ${code}`;
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

class Supervised {
  child: ChildProcess | undefined;
  private closed = false;
  private crashes = 0;
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly spec: ServiceSpec,
    private readonly options: Required<SupervisorOptions>,
    private readonly isStopping: () => boolean,
  ) {}

  start(): void {
    const child = spawn(process.execPath, this.spec.args, {
      cwd: this.spec.cwd,
      env: this.spec.env,
      // Its own process group: a Ctrl-C reaches only the supervisor, which decides the order.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.startedAt = Date.now();
    for (const stream of [child.stdout, child.stderr])
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) =>
        this.options.output(this.spec.name, line),
      );
    const started = this.crashes > 0 ? 'restarted' : 'started';
    child.once('spawn', () => this.options.log(`${this.spec.name} ${started} (pid ${child.pid})`));
    child.once('error', (error) => this.options.log(`${this.spec.name} could not start: ${error.message}`));
    this.closed = false;
    // Only this child's close: a crashed one's can come after its replacement started, and
    // must not mark the replacement closed (a stop would then leave it running).
    child.once('close', () => this.child === child && (this.closed = true));
    child.once('exit', (code, signal) => this.exited(code, signal));
  }

  /** An exit nobody asked for: say so and start again after the back-off. */
  private exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.isStopping()) return;
    if (Date.now() - this.startedAt >= this.options.backoff.stableMs) this.crashes = 0;
    this.crashes++;
    const delay = restartDelayMs(this.options.backoff, this.crashes);
    const again = this.crashes > 1 ? ` (${this.crashes} crashes in a row)` : '';
    const capped = delay === this.options.backoff.maxMs ? '; it keeps crashing, retrying at the longest back-off' : '';
    this.options.log(
      `${this.spec.name} exited unexpectedly (${describeExit(code, signal)})${again}; restarting in ${seconds(delay)}${capped}`,
    );
    this.timer = setTimeout(() => this.start(), delay);
  }

  /** SIGTERM to the process group, SIGKILL after the timeout; no restart is pending afterwards. */
  stop(): Promise<void> {
    clearTimeout(this.timer);
    const child = this.child;
    if (!child || this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const kill = setTimeout(() => signalGroup(child, 'SIGKILL'), this.options.stopTimeoutMs);
      // 'close', not 'exit': its last log lines are read before we go on.
      child.once('close', () => {
        clearTimeout(kill);
        resolve();
      });
      signalGroup(child, 'SIGTERM');
    });
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

export class Supervisor {
  private readonly services: Supervised[] = [];
  private readonly afterStops: Array<{ name: string; stop: () => Promise<void> }> = [];
  private readonly options: Required<SupervisorOptions>;
  private stopping: Promise<void> | undefined;

  constructor(options: SupervisorOptions) {
    this.options = { backoff: DEFAULT_BACKOFF, stopTimeoutMs: 30_000, ...options };
  }

  /** Starts a child and keeps it running until `stop()`. */
  start(spec: ServiceSpec): void {
    const service = new Supervised(spec, this.options, () => this.stopping !== undefined);
    this.services.push(service);
    service.start();
  }

  /** Run by `stop()` after every child has exited, the last registered first. */
  afterChildren(name: string, stop: () => Promise<void>): void {
    this.afterStops.unshift({ name, stop });
  }

  /** Ctrl-C and SIGTERM stop everything, then the process exits 0. */
  stopOnSignals(): void {
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.on(signal, () => void this.stop().then(() => process.exit(0)));
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopEverything();
    return this.stopping;
  }

  private async stopEverything(): Promise<void> {
    const children = this.services.map((service) => service.spec.name).join(', ');
    const rest = this.afterStops.map(({ name }) => name).join(', ');
    this.options.log(`stopping ${children}${rest && `, then ${rest}`}...`);
    await Promise.all(this.services.map((service) => service.stop()));
    for (const { stop } of this.afterStops) await stop().catch(() => {});
    this.options.log('stopped');
  }
}
