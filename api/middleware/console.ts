import { createReadStream, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Next } from 'koa';
import type { AppContext } from '../http/context';
import { problems } from '../problems';

/** Where `npm run console:build` writes the console (dist/console/dist once compiled, like the api). */
export const CONSOLE_DIST = path.resolve(__dirname, '../../console/dist');

/** Paths the console never answers: the API, the hub, problem types, probes, metrics, the explorer. */
const SERVER_PREFIXES = ['/api', '/hubs', '/errors', '/healthz', '/readyz', '/metrics', '/swagger'];

/**
 * Scripts only from this origin (no inline script, no eval). Styles allow 'unsafe-inline':
 * Mantine sets CSS variables in `<style>` elements and `style` attributes at run time,
 * which no nonce covers; an injected style cannot run code. Framing is refused (clickjacking).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Vite names everything under assets/ by its content hash: a changed file is a new name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The operator console is not built</h1>
<p>Run <code>npm run console:build</code> (it writes console/dist), then reload this page.
The REST API is at <a href="/api/openapi.json">/api</a>.</p></body></html>`;

/**
 * True for a path the console may answer: none of the server's own prefixes, in any case
 * (`/API/TENANT` is no route, and stays a 404 problem rather than the console's page).
 */
export function isConsolePath(requestPath: string): boolean {
  const lower = requestPath.toLowerCase();
  return !SERVER_PREFIXES.some((prefix) => lower === prefix || lower.startsWith(`${prefix}/`));
}

/** The file under `dist` that the path names, if it is one; never anything outside `dist`. */
function fileOf(dist: string, requestPath: string): string | undefined {
  const file = path.resolve(dist, `.${path.posix.normalize(requestPath)}`);
  if (!file.startsWith(dist + path.sep)) return undefined;
  return existsSync(file) && statSync(file).isFile() ? file : undefined;
}

/** The encodings precompressed at build (scripts/console-compress.ts), by the suffix of their files. */
const PRECOMPRESSED = { br: '.br', gzip: '.gz' } as const;

/**
 * The copy of `file` to send: its Brotli or gzip form when the browser accepts it and the
 * build made one (every script and style sheet), else the file itself.
 */
function encodedCopy(ctx: AppContext, file: string): { file: string; encoding?: 'br' | 'gzip' } {
  if (!existsSync(file + PRECOMPRESSED.br)) return { file };
  ctx.vary('Accept-Encoding');
  // Brotli when the browser takes both (they send "gzip, deflate, br" with equal weights).
  for (const encoding of ['br', 'gzip'] as const) {
    const copy = file + PRECOMPRESSED[encoding];
    if (ctx.acceptsEncodings(encoding) === encoding && existsSync(copy)) return { file: copy, encoding };
  }
  return { file };
}

function sendFile(ctx: AppContext, file: string, cacheControl: string): void {
  ctx.type = CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream';
  ctx.set('Cache-Control', cacheControl);
  ctx.set('X-Content-Type-Options', 'nosniff');
  const sent = encodedCopy(ctx, file);
  if (sent.encoding) ctx.set('Content-Encoding', sent.encoding);
  ctx.length = statSync(sent.file).size;
  ctx.body = ctx.method === 'HEAD' ? null : createReadStream(sent.file);
}

function sendIndex(ctx: AppContext, dist: string): void {
  ctx.set('Content-Security-Policy', CONSOLE_CSP);
  ctx.set('Referrer-Policy', 'same-origin');
  const index = path.join(dist, 'index.html');
  if (!existsSync(index)) {
    ctx.status = 503;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = NOT_BUILT;
    return;
  }
  // no-store: a deploy's new index.html (naming new asset hashes) is seen at the next load.
  sendFile(ctx, index, 'no-store');
}

/**
 * Serves the built console for GET and HEAD on every path that is not the server's own:
 * its files as they are, and index.html for any other path (the app's deep links: the
 * browser router reads the path). A missing file under assets/ is a 404, not index.html,
 * so a stale page asking for an old bundle fails visibly instead of parsing HTML as script.
 */
export function serveConsole(dist: string = CONSOLE_DIST) {
  return async function consoleFiles(ctx: AppContext, next: Next) {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !isConsolePath(ctx.path)) {
      await next();
      return;
    }
    const file = ctx.path === '/' ? undefined : fileOf(dist, ctx.path);
    if (file && path.basename(file) !== 'index.html') {
      sendFile(ctx, file, ctx.path.startsWith('/assets/') ? IMMUTABLE : 'no-cache');
      return;
    }
    if (ctx.path.startsWith('/assets/')) throw problems.notFound('console asset', ctx.path);
    sendIndex(ctx, dist);
  };
}
