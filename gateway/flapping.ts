/**
 * An agent that opens WebSocket sessions in a loop (whatever the reason: a bug, a
 * misconfiguration) must not keep the server working in that loop. Its sessions are counted
 * on its row (so every replica counts them); past the limit it is answered with a back-off
 * (OpAMP error_response UNAVAILABLE with retry_info, close 1013; over HTTP 503 Retry-After)
 * and `agent.flapping` is emitted once. While the back-off lasts, this replica refuses it
 * before any database work.
 */
import type { Knex } from 'knex';
import { countSessionStart, type SessionRule, type SessionStart } from '../db/repos/agents';
import { emitEvents, type NewEvent } from '../db/repos/events';
import { OPAMP_SOURCE } from './enrollment';

/**
 * More than 10 sessions within a minute is flapping; it is answered with a minute of back-off.
 * A network blip costs an agent one reconnect, a rolling restart of the api replicas one per
 * replica: a well-behaved agent stays far below ten a minute.
 */
export const FLAPPING: Readonly<SessionRule> = Object.freeze({ sessions: 10, windowSeconds: 60, backoffSeconds: 60 });

export class FlapGuard {
  /** Back-offs this replica has seen end at (ms since the epoch), by agent id. */
  private readonly backoffs = new Map<string, number>();

  constructor(
    private readonly db: Knex,
    readonly rule: Readonly<SessionRule> = FLAPPING,
  ) {}

  /** Seconds left of the agent's back-off as this replica knows it; undefined when none. */
  retryAfter(agentId: string | undefined): number | undefined {
    if (agentId === undefined) return undefined;
    const until = this.backoffs.get(agentId);
    if (until === undefined) return undefined;
    const left = Math.ceil((until - Date.now()) / 1000);
    if (left > 0) return left;
    this.backoffs.delete(agentId);
    return undefined;
  }

  /**
   * Counts a new WebSocket session of an admitted agent; the back-off (seconds) when the
   * agent is flapping, with `agent.flapping` the first time.
   */
  async sessionStarted(agentId: string, tenantId: string): Promise<number | undefined> {
    const start = await this.db.transaction(async (trx) => {
      const counted = await countSessionStart(trx, agentId, this.rule);
      if (counted?.backoffStarted) await emitEvents(trx, [this.flappingEvent(agentId, tenantId)]);
      return counted;
    });
    return this.counted(agentId, start);
  }

  /** `agent.flapping`: the agent's back-off starts now. */
  flappingEvent(agentId: string, tenantId: string): NewEvent {
    return {
      tenantId,
      type: 'agent.flapping',
      source: OPAMP_SOURCE,
      subject: agentId,
      data: {
        agentId,
        sessions: this.rule.sessions + 1,
        windowSeconds: this.rule.windowSeconds,
        retryAfterSeconds: this.rule.backoffSeconds,
      },
    };
  }

  /** Remembers a counted session start's back-off, if any; its seconds left (undefined: none). */
  counted(agentId: string, start: SessionStart | undefined): number | undefined {
    const until = start?.backoffUntil?.getTime();
    if (until === undefined || until <= Date.now()) return undefined;
    this.backoffs.set(agentId, until);
    return this.retryAfter(agentId);
  }
}
