/**
 * Routine reports of online agents (heartbeats, config status) are written in batches: one
 * statement for up to MAX_BATCH agents, a new batch as soon as the previous one is on its
 * way. Under load this turns thousands of single-row statements a second into a few dozen;
 * at rest a report waits for nothing (a batch of one goes at once).
 */
import type { Knex } from 'knex';
import { applyReportsIfOnline, type AgentReport, type ReportedAgent } from '../../db/repos/agent-status';

const MAX_BATCH = 500;
/** Batches in flight at once (each holds one pooled connection). */
const MAX_IN_FLIGHT = 4;

interface Waiting {
  id: string;
  report: AgentReport;
  resolve(result: ReportedAgent | undefined): void;
  reject(error: unknown): void;
}

export class ReportBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly db: Knex) {}

  /** The row as it was before the report, or undefined when the agent was not online (nothing written). */
  submit(id: string, report: AgentReport): Promise<ReportedAgent | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id, report, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const batch = this.take();
      this.inFlight++;
      applyReportsIfOnline(this.db, batch)
        .then((results) => {
          for (const waiting of batch) waiting.resolve(results.get(waiting.id));
        })
        .catch((error: unknown) => {
          for (const waiting of batch) waiting.reject(error);
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  /** Up to MAX_BATCH reports with distinct agent ids (a second report of an agent waits for the next batch). */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    const ids = new Set<string>();
    const rest: Waiting[] = [];
    for (const waiting of this.queue) {
      if (batch.length < MAX_BATCH && !ids.has(waiting.id)) {
        batch.push(waiting);
        ids.add(waiting.id);
      } else {
        rest.push(waiting);
      }
    }
    this.queue = rest;
    return batch;
  }
}
