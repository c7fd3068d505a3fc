import type { Logger } from 'pino';
import type { Duplex } from 'node:stream';
import { DomainError } from '../../domain/errors';
import { TaskTooCostly, ThreadPoolBusy } from '../../platform/thread-pool';
import { isDatabaseUnavailable } from '../../db/errors';
import { catalogue, Problem, problemOf, problems, type ProblemSlug } from '../problems';
import type { AppContext } from '../http/context';

/** The general slug of each status (the catalogue lists it first). */
const bySlugStatus = new Map<number, ProblemSlug>();
for (const [slug, type] of Object.entries(catalogue) as [ProblemSlug, { status: number }][]) {
  if (!bySlugStatus.has(type.status)) bySlugStatus.set(type.status, slug);
}

/** Errors from Koa and its helpers carry an HTTP status; keep the status, never the text. */
function fromHttpError(error: { status?: number; expose?: boolean; message?: string }): Problem | undefined {
  const status = error.status;
  if (!status || status < 400 || status >= 500) return undefined;
  const slug = bySlugStatus.get(status) ?? 'validation-failed';
  return new Problem(slug, error.expose && error.message ? error.message : catalogue[slug].title);
}

/**
 * A Postgres data exception (SQLSTATE class 22) is a value the caller sent that the column
 * cannot hold: NUL in text, a number out of range. The detail never quotes the database's
 * message, which carries the SQL.
 */
function fromDataException(error: { code?: string }): Problem | undefined {
  const code = error.code;
  if (typeof code !== 'string' || !/^22[0-9A-Z]{3}$/.test(code)) return undefined;
  const detail =
    code === '22P05' || code === '22021'
      ? 'Text values must not contain NUL (\\u0000) characters.'
      : code === '22003'
        ? 'A number in the request is out of range.'
        : 'A value in the request cannot be stored as given.';
  return problems.validation([{ path: '', message: detail }]);
}

/**
 * Renders every error as `application/problem+json` (RFC 9457). Unknown errors become a
 * 500 that says nothing of internals; the stack goes to the log with the request id.
 */
export function createProblemRenderer(logger: Logger, errorsBaseUrl: string) {
  function problemFor(ctx: AppContext, error: unknown): Problem {
    if (error instanceof Problem) return error;
    if (error instanceof DomainError) return problemOf(error);
    const refusedValue = fromDataException(error as object);
    if (refusedValue) return refusedValue;
    if (isDatabaseUnavailable(error)) {
      logger.warn({ err: error, requestId: ctx.state.requestId }, 'database unavailable');
      return problems.unavailable('The database is unavailable; retry shortly.');
    }
    if (error instanceof ThreadPoolBusy || error instanceof TaskTooCostly) {
      logger.warn({ err: error, requestId: ctx.state.requestId }, 'parsing threads busy or over budget');
      return new Problem('unavailable', 'Every parsing thread is busy; retry shortly.', {}, { 'Retry-After': '1' });
    }
    const fromKoa = fromHttpError(error as object);
    if (fromKoa) return fromKoa;
    logger.error({ err: error, requestId: ctx.state.requestId }, 'unhandled error');
    return problems.internal();
  }

  function answer(ctx: AppContext, problem: Problem): void {
    ctx.remove('ETag');
    for (const [name, value] of Object.entries(problem.headers)) ctx.set(name, value);
    ctx.status = problem.status;
    ctx.type = 'application/problem+json';
    ctx.body = problemDocument(problem, errorsBaseUrl, ctx.path, ctx.state.requestId);
  }

  return {
    /** Answers the problem a thrown error stands for. */
    error: (ctx: AppContext, error: unknown) => answer(ctx, problemFor(ctx, error)),
    /** A request nothing answered (404 without a body) gets the no-route problem. */
    unanswered(ctx: AppContext): void {
      if (ctx.status === 404 && ctx.body == null) answer(ctx, problems.noRoute(ctx.method, ctx.path));
    },
  };
}

export type ProblemRenderer = ReturnType<typeof createProblemRenderer>;

/**
 * Answers a problem on a bare socket and closes it, where Koa does not answer: the hub's
 * upgrade, a request Node could not read.
 */
export function endWithProblem(
  socket: Duplex,
  problem: Problem,
  where: { errorsBaseUrl: string; instance: string; requestId: string },
): void {
  const body = JSON.stringify(problemDocument(problem, where.errorsBaseUrl, where.instance, where.requestId));
  const headers = Object.entries(problem.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n${headers.join('')}\r\n${body}`,
  );
}

/** The RFC 9457 document of a problem (also written by hand where Koa does not answer: the hub's upgrade). */
export function problemDocument(problem: Problem, errorsBaseUrl: string, instance: string, requestId?: string) {
  return {
    type: `${errorsBaseUrl}/${problem.slug}`,
    title: problem.title,
    status: problem.status,
    detail: problem.detail,
    instance,
    requestId,
    ...problem.extensions,
  };
}
