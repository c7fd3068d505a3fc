/*
 * Whether a worker process is alive, answered by Postgres at once. Each worker holds a shared
 * advisory lock for its task queue on a connection of its own, for as long as it runs. A
 * worker killed (kill -9, out of memory, its container stopped) loses its connection with its
 * process, and Postgres drops the lock in the same moment, so the api knows the worker is gone
 * before an operation is sent, not 90 s later from Temporal's pollers list
 * (docs/deployment.md, "When a dependency is down").
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { Client } from 'pg';
import type { Logger } from 'pino';
import { letGo } from './pg-session';
import type { UpdateTarget } from './temporal';

/** The first key of every presence lock (advisory locks share one space per database): "FlWk". */
const PRESENCE_LOCKS = 0x466c576b;

/** How long after Postgres (re)started workers have to take their locks again. */
export const PRESENCE_SETTLE_MS = 10_000;

/** How soon a worker tries again to take its lock after its connection was lost. */
const RETRY_MS = 1_000;

/** The second key: the task queue's name, hashed to a 32-bit integer. */
function queueKey(taskQueue: string): number {
  return createHash('sha256').update(taskQueue).digest().readInt32BE(0);
}

/** A worker's lock on its task queue, held on a connection of its own and taken again after it is lost. */
export class WorkerPresence {
  private client?: Client;
  private retry?: NodeJS.Timeout;
  private closed = false;

  private constructor(
    private readonly url: string,
    private readonly taskQueue: string,
    private readonly logger?: Logger,
  ) {}

  /** Takes the lock for `taskQueue` (throws when Postgres cannot be reached). */
  static async hold(url: string, taskQueue: string, logger?: Logger): Promise<WorkerPresence> {
    const presence = new WorkerPresence(url, taskQueue, logger);
    try {
      await presence.take();
    } catch (error) {
      await presence.release();
      throw error;
    }
    return presence;
  }

  private async take(): Promise<void> {
    const client = new Client({ connectionString: this.url, application_name: 'fleet-config-worker' });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query('SELECT pg_advisory_lock_shared($1, $2)', [PRESENCE_LOCKS, queueKey(this.taskQueue)]);
    } catch (error) {
      this.lost(client, error as Error);
      throw error;
    }
    if (this.closed) await client.end();
    else this.client = client;
  }

  /** The connection holding the lock (or taking it) is gone: another takes it in RETRY_MS. */
  private lost(client: Client, error?: Error): void {
    void letGo(client);
    if (this.client === client) this.client = undefined;
    if (this.closed || this.retry) return;
    this.logger?.warn({ err: error }, "worker presence: Postgres connection lost; taking the task queue's lock again");
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.take().catch(() => {}); // lost() has planned the next try
    }, RETRY_MS);
  }

  /** Lets the lock go (the worker has stopped). */
  async release(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) await letGo(client);
  }
}

/**
 * Whether a worker process holds the lock of `taskQueue`: true or false, or undefined while
 * the answer cannot be trusted (Postgres started less than PRESENCE_SETTLE_MS ago, so living
 * workers may not have taken their locks again yet).
 */
export async function workerPresent(db: Knex, taskQueue: string): Promise<boolean | undefined> {
  const { rows } = await db.raw<{ rows: { held: boolean; settled: boolean }[] }>(
    `SELECT EXISTS (
              SELECT 1 FROM pg_locks
              WHERE locktype = 'advisory' AND granted AND objsubid = 2
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND classid = ?::bigint::oid AND objid = ?::bigint::oid
            ) AS held,
            pg_postmaster_start_time() < now() - make_interval(secs => ?) AS settled`,
    [PRESENCE_LOCKS, queueKey(taskQueue) >>> 0, PRESENCE_SETTLE_MS / 1000],
  );
  const [row] = rows;
  return row!.held ? true : row!.settled ? false : undefined;
}

/** The target of an Update sent to a workflow on `taskQueue` (platform/temporal.ts), its workers asked of Postgres. */
export function updateTarget(db: Knex, taskQueue: string): UpdateTarget {
  return { taskQueue, workerPresent: () => workerPresent(db, taskQueue) };
}
