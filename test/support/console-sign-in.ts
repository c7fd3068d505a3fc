/**
 * Signs a demo person in to the console the way a browser does, over real HTTP: the api's
 * /api/auth/login redirect, the test issuer's sign-in page (its form posted), the redirect
 * back to /api/auth/callback, and the session cookie it sets. Test apps answer at a loopback
 * port but are configured as http://fleet.test, so the provider's redirect back is sent to
 * the app's real address.
 */
import type { TestApp } from './app';
import { TEST_CONSOLE_REDIRECT } from '../../scripts/infra/oidc-tokens';

/** The cookies one site set, sent back on every later request to it (paths ignored). */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

export interface ConsoleBrowser {
  /** The app's cookies (the session among them). */
  jar: CookieJar;
  /** The session's CSRF token, from GET /api/auth/session. */
  csrfToken: string;
  /** Where the callback sent the browser. */
  landedOn: string;
}

async function go(url: string, jar: CookieJar, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(url, {
    ...init,
    redirect: 'manual',
    headers: { ...(init.headers as Record<string, string>), cookie: jar.header() },
  });
  jar.take(response);
  return response;
}

/** Follows the provider's redirects until it sends the browser back to the console. */
async function throughProvider(start: string, jar: CookieJar, login: string): Promise<string> {
  let url = start;
  for (let step = 0; step < 10; step++) {
    if (url.startsWith(TEST_CONSOLE_REDIRECT)) return url;
    const response = await go(url, jar);
    const location = response.headers.get('location');
    if (location) {
      url = new URL(location, url).href;
      continue;
    }
    const page = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
    if (!action) throw new Error(`the provider's page at ${url} has no form (${response.status})`);
    const posted = await go(new URL(action.replaceAll('&amp;', '&'), url).href, jar, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ prompt: 'login', login, password: 'demo' }).toString(),
    });
    url = new URL(posted.headers.get('location')!, url).href;
  }
  throw new Error('the sign-in did not come back to the console');
}

/**
 * GET /api/auth/login as a browser that knows http://fleet.test as the app's address: the
 * app, reached at its loopback address, first sends the browser to its public origin (once);
 * that request goes to the app again (fleet.test is this app), and answers the provider's URL.
 */
export async function startSignIn(t: TestApp, jar: CookieJar, returnTo?: string): Promise<Response> {
  const query = returnTo === undefined ? '' : `?returnTo=${encodeURIComponent(returnTo)}`;
  const first = await go(`${t.baseUrl}/api/auth/login${query}`, jar);
  const moved = first.status === 302 ? new URL(first.headers.get('location')!) : undefined;
  if (moved?.origin !== new URL(t.settings.http.publicBaseUrl).origin) return first;
  return go(t.baseUrl + moved.pathname + moved.search, jar);
}

/** A demo person (scripts/dev/demo-oidc.ts: alice, bob, olivia, victor, audrey) signed in. */
export async function signInToConsole(t: TestApp, login: string, returnTo = '/'): Promise<ConsoleBrowser> {
  const jar = new CookieJar();
  const start = await startSignIn(t, jar, returnTo);
  if (start.status !== 302) throw new Error(`/api/auth/login answered ${start.status}: ${await start.text()}`);
  const providerJar = new CookieJar();
  const back = await throughProvider(start.headers.get('location')!, providerJar, login);
  const callback = await go(t.baseUrl + new URL(back).pathname + new URL(back).search, jar);
  if (callback.status !== 302) throw new Error(`the callback answered ${callback.status}: ${await callback.text()}`);
  const session = await go(`${t.baseUrl}/api/auth/session`, jar);
  const body = (await session.json()) as { csrfToken: string };
  return { jar, csrfToken: body.csrfToken, landedOn: callback.headers.get('location')! };
}

/** A request the signed-in browser makes (the session cookie; the CSRF token when asked). */
export async function browserCall(
  t: TestApp,
  browser: ConsoleBrowser,
  method: string,
  path: string,
  options: { body?: unknown; csrf?: boolean; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { cookie: browser.jar.header(), ...options.headers };
  if (options.csrf ?? true) headers['x-csrf-token'] = browser.csrfToken;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(t.baseUrl + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text && /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text,
  };
}
