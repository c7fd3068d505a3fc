/**
 * The operator console's sessions (docs/console.md). A person who signed in holds a random
 * secret in an httpOnly, SameSite=Lax cookie; the database keeps its SHA-256 with who they
 * are, so any api replica serves them. A cookie travels with every request the browser
 * makes to us, including ones another site triggers, so a write authenticated by the cookie
 * must also carry the session's CSRF token in a header (another site can neither read it
 * nor set the header), and, when the browser names the page's origin, come from ours.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';
import type { ConsoleSessionRow } from '../../db/repos/console-sessions';
import { findConsoleSession, insertConsoleSession, touchConsoleSession } from '../../db/repos/console-sessions';
import { ensureTenant } from '../../db/repos/tenants';
import { hashToken } from '../../domain/tokens/secret-token';
import type { Settings } from '../../platform/settings';
import { problems } from '../problems';
import type { AppContext } from '../http/context';
import type { Principal } from './principal';
import { isRole, permissionsOf, type Role } from './roles';

export const SESSION_COOKIE = 'fleet_session';
export const CSRF_HEADER = 'X-CSRF-Token';

/** Methods that change nothing: no CSRF token needed. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface SignedInPerson {
  subject: string;
  displayName?: string;
  tenantId: string;
  roles: Role[];
}

export interface ConsoleSessions {
  /** Starts a session for the person; answers the cookie's secret (shown to the browser only). */
  start(person: SignedInPerson): Promise<{ secret: string; row: ConsoleSessionRow }>;
  /** The principal of the request's session cookie, or undefined without a live one. */
  authenticate(ctx: AppContext): Promise<Principal | undefined>;
  /**
   * The principal of a live session's secret, for the live-updates hub (a WebSocket upgrade
   * has no Koa context; its Origin is the hub's to check). `touch: false` checks the
   * session without counting as activity: an open socket's rechecks do not keep an
   * unattended console signed in past its idle time.
   */
  sessionPrincipal(secret: string, options?: { touch?: boolean }): Promise<Principal | undefined>;
  /** The CSRF token that goes with a session secret. */
  csrfToken(secret: string): string;
  /** Sets or clears the session cookie on the answer. */
  setCookie(ctx: AppContext, secret: string | null): void;
}

export function createConsoleSessions(
  db: Knex,
  settings: Pick<Settings, 'console' | 'http'> & { key: Buffer },
): ConsoleSessions {
  const { sessionHours, idleMinutes } = settings.console;
  const publicOrigin = new URL(settings.http.publicBaseUrl).origin;

  function csrfToken(secret: string): string {
    return createHmac('sha256', settings.key).update(`console-csrf\0${secret}`).digest('base64url');
  }

  /** A write must carry the session's CSRF token, and not come from another origin. */
  function checkCsrf(ctx: AppContext, secret: string): void {
    if (SAFE_METHODS.has(ctx.method)) return;
    const origin = ctx.get('origin');
    if (origin && origin !== publicOrigin) {
      throw problems.forbidden(`A request from ${origin} may not use the console's session.`);
    }
    const sent = Buffer.from(ctx.get(CSRF_HEADER));
    const expected = Buffer.from(csrfToken(secret));
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
      throw problems.forbidden(
        `A change made with the console's session cookie needs the session's CSRF token in the ${CSRF_HEADER} header.`,
      );
    }
  }

  async function liveSession(secret: string, touch: boolean): Promise<ConsoleSessionRow | undefined> {
    if (touch) return touchConsoleSession(db, hashToken(secret), idleMinutes);
    const row = await findConsoleSession(db, hashToken(secret));
    const now = Date.now();
    const live = row && row.expires_at.getTime() > now && row.last_seen_at.getTime() > now - idleMinutes * 60_000;
    return live ? row : undefined;
  }

  function principalOf(row: ConsoleSessionRow): Principal {
    const roles = row.roles.filter(isRole);
    return {
      kind: 'session',
      id: row.subject,
      name: row.subject,
      tenantId: row.tenant_id,
      roles,
      permissions: permissionsOf(roles),
      expiresAt: row.expires_at.getTime(),
    };
  }

  return {
    csrfToken,

    async start(person) {
      await ensureTenant(db, person.tenantId);
      const secret = randomBytes(32).toString('base64url');
      const row = await insertConsoleSession(db, {
        secret_hash: hashToken(secret),
        tenant_id: person.tenantId,
        subject: person.subject,
        display_name: person.displayName ?? null,
        roles: person.roles,
        expires_at: new Date(Date.now() + sessionHours * 3_600_000),
      });
      return { secret, row };
    },

    async authenticate(ctx) {
      const secret = ctx.cookies.get(SESSION_COOKIE);
      if (!secret) return undefined;
      const row = await liveSession(secret, true);
      if (!row) return undefined;
      // A refused write is the session person's, in their tenant: the audit trail says who.
      const principal = principalOf(row);
      ctx.state.principal = principal;
      checkCsrf(ctx, secret);
      return principal;
    },

    async sessionPrincipal(secret, options = {}) {
      const row = await liveSession(secret, options.touch ?? true);
      return row && principalOf(row);
    },

    setCookie(ctx, secret) {
      ctx.cookies.set(SESSION_COOKIE, secret, {
        httpOnly: true,
        sameSite: 'lax',
        secure: ctx.secure,
        path: '/',
        maxAge: secret === null ? undefined : sessionHours * 3_600_000,
        overwrite: true,
      });
    },
  };
}
