import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { AppContext } from '../http/context';

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's sane `X-Request-Id` (for tracing across services) or makes one. */
export async function requestId(ctx: AppContext, next: Next) {
  const incoming = ctx.get('x-request-id');
  ctx.state.requestId = ACCEPTABLE.test(incoming) ? incoming : randomUUID();
  ctx.set('X-Request-Id', ctx.state.requestId);
  await next();
}
