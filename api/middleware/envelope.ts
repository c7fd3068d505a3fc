import type { Next } from 'koa';
import type { AppContext } from '../http/context';
import { closeLingering } from '../http/lingering-close';
import type { ProblemRenderer } from './problems';
import { assignRequestId } from './request-id';

export interface EnvelopeParts {
  problems: ProblemRenderer;
  /** Queues the audit row of a call its route did not record itself. */
  audit(ctx: AppContext): void;
  /** The log line and metrics of a finished request. */
  observe(ctx: AppContext, started: bigint): void;
}

/**
 * What every request gets around its route, in one middleware: a request id; the problem
 * document of whatever went wrong (or of no route answering); then its audit row, log line
 * and metrics; and `Connection: close` when its body was left unread (refused before the
 * body was needed: 401, 404, 405, 415, or a 413 that stopped reading), since Node would
 * otherwise read and discard the rest, however large (a 4 GB upload into a 401). That close
 * lingers (http/lingering-close.ts), so a client still sending reads the answer, not a reset.
 *
 * One async frame rather than one middleware each: every frame is a promise and a
 * dispatch per request, and at thousands of requests a second the five cost more than
 * their work (docs/performance.md).
 */
export function requestEnvelope(parts: EnvelopeParts) {
  return async function envelope(ctx: AppContext, next: Next) {
    const started = process.hrtime.bigint();
    assignRequestId(ctx);
    try {
      await next();
      parts.problems.unanswered(ctx);
    } catch (error) {
      parts.problems.error(ctx, error);
    } finally {
      try {
        parts.audit(ctx);
        parts.observe(ctx, started);
      } finally {
        if (!ctx.req.complete) {
          ctx.set('Connection', 'close');
          closeLingering(ctx.req);
        }
      }
    }
  };
}
