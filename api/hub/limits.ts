/**
 * What one hub connection may ask of the replica (docs/events.md, Limits): each of its
 * subscriptions is matched against every event the replica fans out, and each of its
 * messages is parsed and answered, so both are bounded.
 */

export const HUB_LIMITS = {
  /** Subscriptions one connection may hold; a subscribe beyond them is refused. */
  subscriptions: 100,
  /** Messages a second, on average; `burst` may come at once. Beyond, they are dropped. */
  messagesPerSecond: 50,
  burst: 200,
  /** Malformed messages within `malformedWindowMs` that close the connection (1008). */
  malformed: 10,
  malformedWindowMs: 10_000,
  /** Dropped messages within a second that close the connection (1008): it does not slow down. */
  droppedPerSecond: 100,
} as const;

export type Verdict = 'take' | 'drop' | 'drop-and-tell' | 'close';

/** One connection's allowance: a token bucket for its messages, and a count of its malformed ones. */
export class MessageAllowance {
  private tokens: number = HUB_LIMITS.burst;
  private refilledAt: number;
  private dropped = 0;
  private droppedSince: number;
  private readonly malformedAt: number[] = [];

  constructor(now = Date.now()) {
    this.refilledAt = now;
    this.droppedSince = now;
  }

  /**
   * Whether a message that just came is handled. Over the rate it is dropped, and the first
   * dropped in a second is answered (`drop-and-tell`); a connection that goes on past
   * `droppedPerSecond` is closed.
   */
  admit(now = Date.now()): Verdict {
    this.tokens = Math.min(
      HUB_LIMITS.burst,
      this.tokens + ((now - this.refilledAt) / 1000) * HUB_LIMITS.messagesPerSecond,
    );
    this.refilledAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 'take';
    }
    if (now - this.droppedSince >= 1000) {
      this.droppedSince = now;
      this.dropped = 0;
    }
    this.dropped++;
    if (this.dropped > HUB_LIMITS.droppedPerSecond) return 'close';
    return this.dropped === 1 ? 'drop-and-tell' : 'drop';
  }

  /** Counts a malformed message; true when the connection has sent too many of them lately. */
  malformed(now = Date.now()): boolean {
    this.malformedAt.push(now);
    while (this.malformedAt[0]! <= now - HUB_LIMITS.malformedWindowMs) this.malformedAt.shift();
    return this.malformedAt.length >= HUB_LIMITS.malformed;
  }
}
