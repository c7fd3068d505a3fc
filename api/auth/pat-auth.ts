import type { Knex } from 'knex';
import { findPatByHash, touchPat, type PatRow } from '../../db/repos/pats';
import { problems } from '../problems';
import type { Principal } from './principal';
import { isRole, permissionsOf } from './roles';
import { isWellFormed, sameHash, tokenDigestHex } from '../../domain/tokens/secret-token';

export const PAT_CHANGES_CHANNEL = 'fleet_pat_changes';
const CACHE_MS = 30_000;
const TOUCH_EVERY_MS = 60_000;

/**
 * Authenticates `svc-pat.` tokens. A token whose CRC does not match is refused before any
 * database look-up. Valid rows are cached briefly by hash; a revocation evicts the entry
 * here at once and on every other replica through NOTIFY (see `evict`). `last_used_at` is
 * written at most once a minute per token, off the request path.
 */
/** The principal a PAT row stands for; undefined when its role is none this service knows. */
function principalOf(row: PatRow): Principal | undefined {
  if (!isRole(row.role)) return undefined;
  return {
    kind: 'pat',
    id: row.id,
    name: row.name,
    tenantId: row.tenant_id,
    roles: [row.role],
    permissions: permissionsOf([row.role]),
    allowedEndpoints: row.allowed_endpoints ?? undefined,
    expiresAt: row.expires_at.getTime(),
  };
}

interface KnownPat {
  row: PatRow;
  /** Built once per look-up, not per call: every call with the token shares it. */
  principal: Principal | undefined;
}

export function createPatAuthenticator(db: Knex) {
  const cache = new Map<string, KnownPat & { until: number }>();
  const touched = new Map<string, number>();

  // Bumped by every eviction: a look-up that raced one must not cache what it read.
  let evictions = 0;

  function cached(key: string): KnownPat | undefined {
    const hit = cache.get(key);
    return hit && hit.until > Date.now() ? hit : undefined;
  }

  async function lookup(key: string): Promise<KnownPat | undefined> {
    const generation = evictions;
    const hash = Buffer.from(key, 'hex');
    const row = await findPatByHash(db, hash);
    if (!row || !sameHash(row.token_hash, hash)) return undefined;
    const known = { row, principal: principalOf(row) };
    if (generation === evictions) cache.set(key, { ...known, until: Date.now() + CACHE_MS });
    return known;
  }

  function touch(row: PatRow) {
    const last = touched.get(row.id) ?? 0;
    if (Date.now() - last < TOUCH_EVERY_MS) return;
    touched.set(row.id, Date.now());
    void touchPat(db, row.id).catch(() => touched.delete(row.id));
  }

  return {
    async authenticate(token: string): Promise<Principal> {
      // Rows are found, and cached, by the token's digest: no comparison ever reads the
      // token itself. A cached token was well-formed when it was looked up; any other has
      // its CRC checked before the database is asked.
      const key = tokenDigestHex(token);
      let known = cached(key);
      if (!known) {
        if (!isWellFormed('svc-pat', token)) throw problems.unauthorized('The personal access token is malformed.');
        known = await lookup(key);
      }
      if (!known) throw problems.unauthorized('The personal access token is not known.');
      const { row, principal } = known;
      if (row.revoked_at) throw problems.unauthorized('The personal access token has been revoked.');
      if (row.expires_at.getTime() <= Date.now()) throw problems.unauthorized('The personal access token has expired.');
      if (!principal) throw problems.unauthorized('The personal access token carries an unknown role.');
      touch(row);
      return principal;
    },

    /** Forget a token (by id, or all when a notification was missed). */
    evict(patId?: string) {
      evictions++;
      if (!patId) return cache.clear();
      for (const [key, entry] of cache) if (entry.row.id === patId) cache.delete(key);
    },
  };
}

export type PatAuthenticator = ReturnType<typeof createPatAuthenticator>;
