import type { Next } from 'koa';
import type { Logger } from 'pino';
import { catalogue, Problem, problems, type ProblemSlug } from '../problems';
import type { AppContext } from '../http/context';

const bySlugStatus = new Map<number, ProblemSlug>(
  (Object.entries(catalogue) as [ProblemSlug, { status: number }][]).map(([slug, t]) => [t.status, slug]),
);

/** Errors from Koa and its helpers carry an HTTP status; keep the status, never the text. */
function fromHttpError(error: { status?: number; expose?: boolean; message?: string }): Problem | undefined {
  const status = error.status;
  if (!status || status < 400 || status >= 500) return undefined;
  const slug = bySlugStatus.get(status) ?? 'validation-failed';
  return new Problem(slug, error.expose && error.message ? error.message : catalogue[slug].title);
}

/**
 * Renders every error as `application/problem+json` (RFC 9457). Unknown errors become a
 * 500 that says nothing of internals; the stack goes to the log with the request id.
 */
export function renderProblems(logger: Logger, errorsBaseUrl: string) {
  return async function renderProblem(ctx: AppContext, next: Next) {
    let problem: Problem;
    try {
      await next();
      if (ctx.status !== 404 || ctx.body != null) return;
      problem = problems.noRoute(ctx.method, ctx.path);
    } catch (error) {
      problem =
        error instanceof Problem
          ? error
          : fromHttpError(error as object) ??
            (logger.error({ err: error, requestId: ctx.state.requestId }, 'unhandled error'), problems.internal());
    }
    ctx.remove('ETag');
    for (const [name, value] of Object.entries(problem.headers)) ctx.set(name, value);
    ctx.status = problem.status;
    ctx.type = 'application/problem+json';
    ctx.body = {
      type: `${errorsBaseUrl}/${problem.slug}`,
      title: problem.title,
      status: problem.status,
      detail: problem.detail,
      instance: ctx.path,
      requestId: ctx.state.requestId,
      ...problem.extensions,
    };
  };
}
