import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { firstInvalidUtf8, invalidUtf8Field, loneSurrogateField } from '../http/encoding';
import { problems } from '../problems';
import type { AppContext } from '../http/context';

/** The methods whose body is read (others may send one; it is left unread). */
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;
/** Bodies declared far beyond the limit are refused at once; smaller overruns are drained. */
const DRAIN_FACTOR = 8;

function hasBody(ctx: AppContext): boolean {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
}

/**
 * Reads the body, keeping at most `limit` bytes. An overrun is drained up to DRAIN_FACTOR ×
 * the limit, then reading stops without destroying the request: the 413 is still answered,
 * and `Connection: close` (the request envelope, envelope.ts) ends the connection after it
 * with a lingering close, so the client reads our 413 rather than a reset.
 */
function readLimited(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (outcome: () => void) => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
      req.pause();
      outcome();
    };
    const onEnd = () =>
      stop(() => (size > limit ? reject(problems.payloadTooLarge(limit)) : resolve(Buffer.concat(chunks, size))));
    const onError = (error: Error) => stop(() => reject(error));
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > limit * DRAIN_FACTOR) stop(() => reject(problems.payloadTooLarge(limit)));
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/** Bodies are taken as sent: a content coding (gzip, br…) is refused rather than inflated. */
function contentCoded(ctx: AppContext): string | undefined {
  const encoding = ctx.get('content-encoding').trim().toLowerCase();
  return encoding === '' || encoding === 'identity' ? undefined : encoding;
}

/**
 * Parses JSON request bodies into `ctx.request.body`. Anything else with a body is 415
 * (so is a content-coded one), a body over the limit 413, invalid JSON 400, and a body that
 * is not valid UTF-8 or holds a lone surrogate 400 naming the field (http/encoding.ts) —
 * before any route runs. Answers undefined when the request has no body to read.
 */
export function jsonBody(limit: number) {
  async function read(ctx: AppContext): Promise<void> {
    const type = ctx.get('content-type').split(';')[0]!.trim();
    if (!JSON_TYPE.test(type)) throw problems.unsupportedMediaType(type || undefined);
    const encoding = contentCoded(ctx);
    if (encoding) throw problems.unsupportedEncoding(encoding);
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit * DRAIN_FACTOR) throw problems.payloadTooLarge(limit);
    const raw = await readLimited(ctx.req, limit);
    if (!isUtf8(raw)) throw problems.validation([invalidUtf8Field(raw, firstInvalidUtf8(raw))]);
    const text = raw.toString('utf8');
    if (text.trim() === '') return;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw problems.malformedJson((error as Error).message);
    }
    const surrogate = loneSurrogateField(text, body);
    if (surrogate) throw problems.validation([surrogate]);
    (ctx.request as { body?: unknown }).body = body;
  }

  return function readJsonBody(ctx: AppContext): Promise<void> | undefined {
    if (!WITH_BODY.has(ctx.method) || !hasBody(ctx)) return undefined;
    return read(ctx);
  };
}

/**
 * Reads a body the route never uses (the Git webhook's: any content type, any coding) only
 * to hold it to `limit`: 413 above it, as for JSON bodies. Nothing is parsed or kept.
 */
export async function discardBody(ctx: AppContext, limit: number): Promise<void> {
  if (!hasBody(ctx)) return;
  if (Number(ctx.get('content-length') || 0) > limit * DRAIN_FACTOR) throw problems.payloadTooLarge(limit);
  await readLimited(ctx.req, limit);
}
