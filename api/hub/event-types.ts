/**
 * Which events a caller may receive, and how a subscription names them. Shared by the hub
 * and `GET /api/events`, so a socket and a poll see the same events.
 */
import { EVENT_TYPES } from '../../db/repos/events';
import type { Principal } from '../auth/principal';
import type { Permission } from '../auth/roles';

/**
 * `rollout.started`, a family `rollout.*`, or everything `*`. A family must name a prefix
 * some event type has, so a typo is an error rather than a silent subscription to nothing.
 */
export const TYPE_PATTERN = /^(\*|[a-z][a-z-]*(\.[a-z][a-z-]*)*(\.\*)?)$/;

const FAMILIES = new Set(EVENT_TYPES.map((type) => type.slice(0, type.indexOf('.'))));

/** Why a pattern matches no event type the service emits; undefined when it is fine. */
export function unknownPattern(pattern: string): string | undefined {
  if (pattern === '*') return undefined;
  if (pattern.endsWith('.*')) {
    const prefix = pattern.slice(0, -1);
    return EVENT_TYPES.some((type) => type.startsWith(prefix)) ? undefined : `no event type starts with ${prefix}`;
  }
  return (EVENT_TYPES as readonly string[]).includes(pattern) ? undefined : `${pattern} is not an event type`;
}

/** Every pattern unknownPattern accepts: `*`, each event type, each family of one (`git.*`, `git.sync-run.*`). */
function knownPatterns(): string[] {
  const families = EVENT_TYPES.flatMap((type) =>
    type
      .split('.')
      .slice(0, -1)
      .map((_, i, parts) => `${parts.slice(0, i + 1).join('.')}.*`),
  );
  return ['*', ...new Set([...EVENT_TYPES, ...families])];
}

/**
 * A comma-separated list of known patterns, each trimmed (as `GET /api/events?type=` reads
 * it): the document's pattern for that parameter.
 */
export function typeListPattern(space: string): RegExp {
  const entry = `(${knownPatterns()
    .map((pattern) => pattern.replace(/[.*]/g, '\\$&'))
    .join('|')})`;
  return new RegExp(`^${space}*${entry}${space}*(,${space}*${entry}${space}*)*$`);
}

export function matchesAny(patterns: readonly string[], type: string): boolean {
  return patterns.some(
    (pattern) =>
      pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))),
  );
}

/**
 * Event families that need more than `read`: PATs are the admins' (as `GET /api/pats` is).
 * Everything else is what a viewer may read through the API anyway.
 */
const RESTRICTED: Record<string, Permission> = { pat: 'admin' };

/** The families (`pat.`) whose events this caller may not receive. */
export function hiddenPrefixes(principal: Principal): string[] {
  return Object.entries(RESTRICTED)
    .filter(([family, permission]) => FAMILIES.has(family) && !principal.permissions.has(permission))
    .map(([family]) => `${family}.`);
}

/** What a caller needs beyond `read` to receive events of this type (undefined: nothing). */
export function permissionToReceive(type: string): Permission | undefined {
  return RESTRICTED[type.slice(0, type.indexOf('.'))];
}
