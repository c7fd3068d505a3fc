/**
 * The first messages of WebSocket sessions, many in one transaction: after a replica
 * restarts, its agents all start a session at once, and each start wrote two transactions
 * of its own (the flapping count, then the status with `agent.connected`: seven round trips
 * and two commits per agent). A batch does the same in one: the session starts counted
 * (gateway/flapping.ts), the reports of the agents not backing off applied as
 * `applyStatus` applies one (online, the session speaking for the agent), and
 * `agent.flapping` / `agent.connected` emitted.
 *
 * Only what that path does alike for every agent goes here: an admitted agent (not held, not
 * just enrolled) whose message carries no connection settings status. A batch that fails
 * answers each of its starts `undefined`: the caller then takes the one-agent path, with its
 * own retries.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import {
  applySessionStarts,
  batchedReport,
  countSessionStarts,
  type AgentReport,
  type ReportedAgent,
} from '../db/repos/agents';
import { emitEvents, type NewEvent } from '../db/repos/events';
import { Coalescer } from './coalescer';
import { OPAMP_SOURCE } from './enrollment';
import type { FlapGuard } from './flapping';

export interface SessionStart {
  agentId: string;
  tenantId: string;
  /** The WebSocket session that now speaks for the agent. */
  sessionId: string;
  report: AgentReport;
}

/** Flapping: refused, back after this many seconds; else the row as it was (undefined: no such agent). */
export type SessionStarted = { flapping: number } | { flapping?: undefined; reported: ReportedAgent | undefined };

export class SessionStarts {
  private readonly batches: Coalescer<SessionStart, SessionStarted | undefined>;

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    private readonly flaps: FlapGuard,
  ) {
    this.batches = new Coalescer((starts) => this.write(starts), {
      maxBatch: 500,
      maxInFlight: 1,
      keyOf: (start) => start.agentId,
    });
  }

  /** The start counted and its status written; undefined when the batch failed. */
  submit(start: SessionStart): Promise<SessionStarted | undefined> {
    return this.batches.submit(start);
  }

  private async write(starts: SessionStart[]): Promise<Array<SessionStarted | undefined>> {
    try {
      const { counts, reported } = await this.db.transaction(async (trx) => {
        const counts = await countSessionStarts(
          trx,
          starts.map((start) => start.agentId),
          this.flaps.rule,
        );
        const events: NewEvent[] = [];
        const admitted: SessionStart[] = [];
        for (const start of starts) {
          const counted = counts.get(start.agentId);
          if (counted?.backoffStarted) events.push(this.flaps.flappingEvent(start.agentId, start.tenantId));
          if (counted && !counted.backoffUntil) admitted.push(start);
        }
        const reported = await applySessionStarts(
          trx,
          admitted.map((start) => batchedReport(start.agentId, { ...start.report, session: start.sessionId })),
        );
        for (const [agentId, agent] of reported)
          if (agent && !agent.cutOff && agent.previous !== 'pending-approval') events.push(connected(agentId, agent));
        await emitEvents(trx, events);
        return { counts, reported };
      });
      return starts.map((start): SessionStarted | undefined => {
        const counted = counts.get(start.agentId);
        if (!counted?.backoffUntil) return { reported: reported.get(start.agentId) };
        // Backing off: not written. (A back-off that ended just now: the one-agent path.)
        const flapping = this.flaps.counted(start.agentId, counted);
        return flapping !== undefined ? { flapping } : undefined;
      });
    } catch (error) {
      this.logger.warn({ err: error, starts: starts.length }, 'session start batch failed; its starts go one by one');
      return starts.map(() => undefined);
    }
  }
}

/** `agent.connected` of a WebSocket session start (as applyStatus emits it). */
function connected(agentId: string, agent: ReportedAgent): NewEvent {
  return {
    tenantId: agent.tenantId,
    type: 'agent.connected',
    source: OPAMP_SOURCE,
    subject: agentId,
    data: { agentId, transport: 'websocket' },
  };
}
