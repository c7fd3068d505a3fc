import { randomUUID } from 'node:crypto';
import type { AppContext } from '../http/context';

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's sane `X-Request-Id` (for tracing across services) or makes one, and answers it. */
export function assignRequestId(ctx: AppContext): void {
  const incoming = ctx.get('x-request-id');
  ctx.state.requestId = ACCEPTABLE.test(incoming) ? incoming : randomUUID();
  ctx.set('X-Request-Id', ctx.state.requestId);
}
