import { randomUUID } from 'node:crypto';
import type { AppContext } from '../http/context';

const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/** A caller's sane `X-Request-Id` (for tracing across services), or a new one. */
export const requestIdFrom = (incoming: string | undefined): string =>
  incoming !== undefined && ACCEPTABLE.test(incoming) ? incoming : randomUUID();

/** Keeps a caller's sane `X-Request-Id` or makes one, and answers it. */
export function assignRequestId(ctx: AppContext): void {
  ctx.state.requestId = requestIdFrom(ctx.get('x-request-id'));
  ctx.set('X-Request-Id', ctx.state.requestId);
}
