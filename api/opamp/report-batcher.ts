/**
 * Routine reports of online agents (heartbeats, config status) are written in batches: one
 * statement for up to MAX_BATCH agents, a new batch as soon as the previous one is on its
 * way. Under load this turns thousands of single-row statements a second into a few dozen;
 * at rest a report waits for nothing (a batch of one goes at once).
 *
 * - An agent's reports are written in the order they came: while one is in flight, the
 *   agent's next waits (a later batch could otherwise lock the row first, and an older
 *   APPLYING overwrite a newer APPLIED).
 * - A batch is capped by size as well as count (a report may carry megabytes of health).
 * - A batch the database refuses costs no agent its session: each of its reports is
 *   answered "not written", and its caller takes the transactional path, where only a
 *   report that is itself unwritable fails.
 *
 * The queue needs no bound of its own: a WebSocket session submits one report at a time,
 * so it holds at most one per connected agent or open HTTP request.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { applyReportsIfOnline, batchedReport, type AgentReport, type BatchedReport, type ReportedAgent } from '../../db/repos/agent-status';

const MAX_BATCH = 500;
/** Bytes of serialised reports per statement (one larger report goes alone). */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
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
    while (this.inFlight < MAX_IN_FLIGHT) {
      const batch = this.take();
      if (batch.length === 0) return;
      this.inFlight++;
      for (const waiting of batch) this.writing.add(waiting.id);
      applyReportsIfOnline(this.db, batch)
        .then(
          (results) => {
            for (const waiting of batch) waiting.resolve(results.get(waiting.id));
          },
          (error: unknown) => {
            this.logger.warn({ err: error, reports: batch.length }, 'report batch failed; its reports are applied one by one');
            for (const waiting of batch) waiting.resolve(undefined);
          },
        )
        .finally(() => {
          for (const waiting of batch) this.writing.delete(waiting.id);
          this.inFlight--;
          this.pump();
        });
    }
  }

  /**
   * Reports in queue order, at most one per agent and none of an agent being written, up
   * to MAX_BATCH reports and MAX_BATCH_BYTES; the rest keep their order for the next batch.
   */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    const ids = new Set<string>();
    const rest: Waiting[] = [];
    let bytes = 0;
    for (const waiting of this.queue) {
      const fits = batch.length < MAX_BATCH && (batch.length === 0 || bytes + waiting.row.length <= MAX_BATCH_BYTES);
      if (fits && !ids.has(waiting.id) && !this.writing.has(waiting.id)) {
        batch.push(waiting);
        ids.add(waiting.id);
        bytes += waiting.row.length;
      } else {
        rest.push(waiting);
      }
    }
    this.queue = rest;
    return batch;
  }
}
