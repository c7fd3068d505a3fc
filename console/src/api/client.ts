/**
 * The console's one way to the API: openapi-fetch over the generated schema (schema.d.ts),
 * so every path, parameter and body is typed by the server's own OpenAPI document.
 * The session cookie goes with every call; writes carry the session's CSRF token; a 401
 * sends the browser to sign in and come back to the page it was on.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];
type Problem = Schemas['Problem'];

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

let csrfToken: string | undefined;

/** Set from GET /api/auth/session; every write made with the cookie must carry it. */
export function rememberCsrfToken(token: string): void {
  csrfToken = token;
}

/** Sign-in at the api, which sends the browser back to `returnTo` (this page) afterwards. */
export function signIn(returnTo = window.location.pathname + window.location.search): void {
  window.location.assign(`/api/auth/login?returnTo=${encodeURIComponent(returnTo)}`);
}

const session: Middleware = {
  onRequest({ request }) {
    if (!SAFE_METHODS.has(request.method) && csrfToken) request.headers.set('X-CSRF-Token', csrfToken);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) signIn();
    return response;
  },
};

export const api = createClient<paths>({ credentials: 'same-origin' });
api.use(session);

/** A problem the API answered (RFC 9457): what the console shows is its title and detail. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
  ) {
    super(`${title}: ${detail}`);
  }
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && 'title' in body && 'detail' in body;
}

/** The body of a successful call; a problem (or anything else) throws an ApiProblem. */
export async function ok<Data>(call: Promise<{ data?: Data; error?: unknown; response: Response }>): Promise<Data> {
  const { data, error, response } = await call;
  if (response.ok && data !== undefined) return data;
  if (isProblem(error)) throw new ApiProblem(error.status, error.title, error.detail);
  throw new ApiProblem(
    response.status,
    response.statusText || 'Request failed',
    `The API answered ${response.status}.`,
  );
}

/** A write the API answers with 204 and no body (a delete): done, or the problem `ok` throws. */
export async function noContent(call: Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<void> {
  const answer = await call;
  if (!answer.response.ok) await ok(Promise.resolve(answer));
}

/** The If-Match header of a write, from the ETag the page shows the object with (none: no header). */
export const ifMatch = (etag: string | null) => (etag ? { 'if-match': etag } : {});
