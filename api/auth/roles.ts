/**
 * The role table (docs/decisions.md, Callers and roles). Routes require a permission; roles grant permissions.
 *   viewer   reads everything but the audit log and PATs
 *   operator viewer + day-to-day changes
 *   auditor  viewer + the audit log
 *   admin    everything
 *   peer     what another installation may call (federation)
 */
export const ROLES = ['viewer', 'operator', 'auditor', 'admin', 'peer'] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = ['read', 'operate', 'audit', 'admin', 'federate'] as const;
export type Permission = (typeof PERMISSIONS)[number];

const grants: Record<Role, readonly Permission[]> = {
  viewer: ['read'],
  operator: ['read', 'operate'],
  auditor: ['read', 'audit'],
  admin: ['read', 'operate', 'audit', 'admin', 'federate'],
  peer: ['federate'],
};

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function permissionsOf(roles: readonly Role[]): Set<Permission> {
  return new Set(roles.flatMap((role) => grants[role]));
}

/** A role is within a caller's ceiling when it grants nothing the caller lacks. */
export function withinCeiling(role: Role, held: ReadonlySet<Permission>): boolean {
  return grants[role].every((permission) => held.has(permission));
}
