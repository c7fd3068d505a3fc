/**
 * Routine reports of online agents (heartbeats, config status) are written in batches: one
 * statement for up to MAX_BATCH agents, a new batch BATCH_SPACING_MS after the previous one
 * started (coalescer.ts). Under load this turns thousands of single-row statements a second
 * into a few dozen; at rest a report waits for nothing (a batch of one goes at once).
 *
 * - An agent's reports are written in the order they came: while one is in flight, the
 *   agent's next waits (a later batch could otherwise lock the row first, and an older
 *   APPLYING overwrite a newer APPLIED).
 * - A batch is capped by size as well as count (a report may carry megabytes of health):
 *   MAX_BATCH_CHARS characters of serialised reports.
 * - A batch the database refuses costs no agent its session for another's report: when a
 *   value was unwritable, its reports are written again one at a time (still in order, their
 *   agents still held back) and only one that fails alone is answered "not written"; on any
 *   other failure (a deadlock victim, the pool) all are. A report answered "not written"
 *   takes its caller's transactional path.
 *
 * The queue needs no bound of its own: a WebSocket session submits one report at a time,
 * so it holds at most one per connected agent or open HTTP request.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import {
  applyReportsIfOnline,
  batchedReport,
  type AgentReport,
  type BatchedReport,
  type ReportedAgent,
} from '../db/repos/agents';
import { BatchSpacing } from './coalescer';

const MAX_BATCH = 500;
/** Characters of serialised reports per statement (one larger report goes alone). */
const MAX_BATCH_CHARS = 8 * 1024 * 1024;
/** Batches in flight at once (each holds one pooled connection). */
const MAX_IN_FLIGHT = 4;

interface Waiting extends BatchedReport {
  resolve(result: ReportedAgent | undefined): void;
}

export class ReportBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;
  /** Agents with a report in a batch on its way. */
  private readonly writing = new Set<string>();
  private readonly spacing = new BatchSpacing();

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
  ) {}

  /**
   * The row as it was before the report, or undefined when nothing was written (the agent
   * was not online, or the batch failed): the caller then applies the report on its own.
   */
  submit(id: string, report: AgentReport): Promise<ReportedAgent | undefined> {
    const entry = batchedReport(id, report);
    return new Promise((resolve) => {
      this.queue.push({ ...entry, resolve });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      if (!this.spacing.mayStart(() => this.pump())) return;
      const batch = this.take();
      if (batch.length === 0) return;
      this.inFlight++;
      for (const waiting of batch) this.writing.add(waiting.id);
      this.write(batch)
        .catch((error: unknown) => {
          this.logger.error({ err: error }, 'report batch failed');
          for (const waiting of batch) waiting.resolve(undefined);
        })
        .finally(() => {
          for (const waiting of batch) this.writing.delete(waiting.id);
          this.inFlight--;
          this.pump();
        });
    }
  }

  private async write(batch: Waiting[]): Promise<void> {
    try {
      const results = await applyReportsIfOnline(this.db, batch);
      for (const waiting of batch) waiting.resolve(results.get(waiting.id));
      return;
    } catch (error) {
      if (batch.length === 1 || !isDataError(error)) {
        // One unwritable report, or a failure not of the data (a deadlock victim, the pool or
        // the connection): its callers take the transactional path, with its own retries.
        this.logger.warn(
          { err: error, reports: batch.length },
          'report batch failed; its reports take the transactional path',
        );
        for (const waiting of batch) waiting.resolve(undefined);
        return;
      }
      this.logger.warn(
        { err: error, reports: batch.length },
        'a report of the batch is unwritable; writing them one at a time',
      );
    }
    for (const waiting of batch) await this.write([waiting]);
  }

  /**
   * Reports in queue order, at most one per agent and none of an agent being written or
   * with an earlier report held back, up to MAX_BATCH reports and MAX_BATCH_CHARS; the rest
   * keep their order for the next batch.
   */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    const ids = new Set<string>();
    /** Agents with a report held back: their later reports wait behind it. */
    const held = new Set<string>();
    const rest: Waiting[] = [];
    let chars = 0;
    for (const waiting of this.queue) {
      const fits = batch.length < MAX_BATCH && (batch.length === 0 || chars + waiting.row.length <= MAX_BATCH_CHARS);
      if (fits && !ids.has(waiting.id) && !held.has(waiting.id) && !this.writing.has(waiting.id)) {
        batch.push(waiting);
        ids.add(waiting.id);
        chars += waiting.row.length;
      } else {
        rest.push(waiting);
        held.add(waiting.id);
      }
    }
    this.queue = rest;
    return batch;
  }
}

/** SQLSTATE classes of a value the statement could not take (22 data, 23 constraint, 54 limits). */
function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code; // a SQLSTATE is a five-character string
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}
