import type { Next } from 'koa';
import { problems } from '../problems';
import type { AppContext } from '../http/context';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;
/** Bodies declared far beyond the limit are refused at once; smaller overruns are drained. */
const DRAIN_FACTOR = 8;

function hasBody(ctx: AppContext): boolean {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
}

async function readLimited(ctx: AppContext, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= limit) chunks.push(chunk);
    else if (size > limit * DRAIN_FACTOR) break;
  }
  if (size > limit) {
    ctx.set('Connection', 'close');
    throw problems.payloadTooLarge(limit);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Parses JSON request bodies into `ctx.request.body`. Anything else with a body is 415,
 * a body over the limit 413, and invalid JSON 400 — before any route runs.
 */
export function jsonBody(limit: number) {
  return async function parseJsonBody(ctx: AppContext, next: Next) {
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) || !hasBody(ctx)) {
      await next();
      return;
    }
    const type = ctx.get('content-type').split(';')[0]!.trim();
    if (!JSON_TYPE.test(type)) throw problems.unsupportedMediaType(type || undefined);
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit * DRAIN_FACTOR) {
      ctx.set('Connection', 'close');
      throw problems.payloadTooLarge(limit);
    }
    const raw = await readLimited(ctx, limit);
    const text = raw.toString('utf8');
    if (text.trim() !== '') {
      try {
        (ctx.request as { body?: unknown }).body = JSON.parse(text);
      } catch (error) {
        throw problems.malformedJson((error as Error).message);
      }
    }
    await next();
  };
}
