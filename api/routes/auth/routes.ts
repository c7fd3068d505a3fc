/**
 * The console's sign-in endpoints (docs/console.md): the api is the backend for the
 * frontend. `login` sends the browser to the identity provider, `callback` turns what it
 * sends back into a session cookie, `session` tells the page who is signed in (and the CSRF
 * token its writes carry), `logout` ends the session. Scripts keep using bearer tokens.
 */
import { deleteConsoleSession, findConsoleSession } from '../../../db/repos/console-sessions';
import { hashToken } from '../../../domain/tokens/secret-token';
import type { ConsoleSessions } from '../../auth/console-session';
import { SESSION_COOKIE } from '../../auth/console-session';
import type { ConsoleSignIn } from '../../auth/console-sign-in';
import { route, type RouteDef } from '../../http/route';
import { problems } from '../../problems';
import { z } from '../../http/zod';

const tag = 'console sign-in';

/** Only a path of this site: never `//host` or `/\host`, which browsers read as another site. */
const returnTo = z
  .string()
  .max(2048)
  .regex(/^\/(?![/\\])[^\s\\]*$/, 'must be a path of this site, starting with a single /')
  .default('/');

const sessionSchema = z
  .object({
    subject: z.string(),
    displayName: z.string().nullable(),
    tenantId: z.string(),
    roles: z.array(z.string()),
    csrfToken: z.string().openapi({ description: 'Send it as X-CSRF-Token with every change made with this session.' }),
    expiresAt: z.string(),
  })
  .openapi('ConsoleSession');

export interface AuthRouteOptions {
  sessions: ConsoleSessions;
  /** Undefined when no OIDC authority is configured: nobody can sign in to the console. */
  signIn?: ConsoleSignIn;
  /** Http:PublicBaseUrl: the origin the identity provider sends the browser back to. */
  publicBaseUrl: string;
}

export function authRoutes({ sessions, signIn, publicBaseUrl }: AuthRouteOptions): RouteDef[] {
  const publicOrigin = new URL(publicBaseUrl).origin;
  const provider = () => {
    if (!signIn) throw problems.notFound('sign-in', 'console (no Authentication:Oidc:Authority is configured)');
    return signIn;
  };
  const redirect = (location: string) => ({
    status: 302,
    headers: { Location: location, 'Cache-Control': 'no-store' },
  });

  return [
    route({
      method: 'get',
      path: '/api/auth/login',
      summary: 'Sign in to the console: redirects to the identity provider (authorization code + PKCE)',
      tag,
      permission: 'public',
      query: z.object({
        returnTo,
        moved: z.literal('1').optional().openapi({ description: 'Set by the move to the public origin: moved once.' }),
      }),
      response: {
        status: 302,
        description:
          "To the identity provider's sign-in page; from another origin than Http:PublicBaseUrl's, to this call there first.",
      },
      handler: async ({ query, ctx }) => {
        // The sign-in's state cookie must be set on the origin the provider sends the browser
        // back to: a browser that came by another name (127.0.0.1 for localhost) goes there
        // first, and lands on the page asked for there. Once only (`moved`), so a proxy that
        // rewrites Host without X-Forwarded-Host cannot make a loop of it.
        if (ctx.origin !== publicOrigin && !query.moved) {
          const there = new URL('/api/auth/login', publicOrigin);
          there.search = new URLSearchParams({ returnTo: query.returnTo, moved: '1' }).toString();
          return redirect(there.toString());
        }
        return redirect(await provider().begin(ctx, query.returnTo));
      },
    }),
    route({
      method: 'get',
      path: '/api/auth/callback',
      summary: 'Where the identity provider sends the browser back: starts the session, then to the page asked for',
      tag,
      permission: 'public',
      response: { status: 302, description: 'To the console page the sign-in started from, with the session cookie.' },
      handler: async ({ ctx }) => {
        const { person, returnTo: back } = await provider().complete(ctx);
        const { secret, row } = await sessions.start(person);
        sessions.setCookie(ctx, secret);
        // The audit row of this call names the person who signed in.
        ctx.state.principal = {
          kind: 'session',
          id: row.subject,
          name: row.subject,
          tenantId: row.tenant_id,
          roles: person.roles,
          permissions: new Set(),
        };
        return redirect(back);
      },
    }),
    route({
      method: 'get',
      path: '/api/auth/session',
      summary: "Who is signed in to the console, and the CSRF token the session's changes carry",
      tag,
      permission: 'read', // every person's role reads; a peer's PAT is no console session
      response: { status: 200, description: 'The session.', schema: sessionSchema },
      handler: async ({ principal, ctx, db }) => {
        const secret = ctx.cookies.get(SESSION_COOKIE);
        if (principal.kind !== 'session' || !secret) {
          throw problems.notFound('console session', 'none: this call was made with a bearer token');
        }
        const row = await findConsoleSession(db, hashToken(secret));
        ctx.set('Cache-Control', 'no-store');
        return {
          body: {
            subject: principal.id,
            displayName: row?.display_name ?? null,
            tenantId: principal.tenantId,
            roles: principal.roles,
            csrfToken: sessions.csrfToken(secret),
            expiresAt: new Date(principal.expiresAt!).toISOString(),
          },
        };
      },
    }),
    route({
      method: 'post',
      path: '/api/auth/logout',
      summary: 'Sign out of the console: the session ends on every replica, the cookie is cleared',
      tag,
      permission: 'read', // every person's role reads; a peer's PAT is no console session
      response: {
        status: 200,
        description: "Signed out; `endSessionUrl` is the identity provider's own sign-out, when it has one.",
        schema: z.object({ endSessionUrl: z.string().nullable() }),
      },
      handler: async ({ principal, ctx, db }) => {
        const secret = ctx.cookies.get(SESSION_COOKIE);
        if (principal.kind !== 'session' || !secret) {
          throw problems.notFound('console session', 'none: this call was made with a bearer token');
        }
        await deleteConsoleSession(db, hashToken(secret));
        sessions.setCookie(ctx, null);
        return { body: { endSessionUrl: (await signIn?.endSessionUrl()) ?? null } };
      },
    }),
  ];
}
