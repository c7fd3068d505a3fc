import type { Permission, Role } from './roles';

/**
 * Who is calling: an operator with an OIDC token or signed in to the console (a session,
 * whose person the provider named at sign-in), or automation with a PAT.
 */
export interface Principal {
  kind: 'oidc' | 'session' | 'pat';
  /** What the audit trail records: the OIDC subject, or the PAT's name. */
  name: string;
  /** OIDC `sub`, or the PAT's id. */
  id: string;
  tenantId: string;
  roles: Role[];
  permissions: ReadonlySet<Permission>;
  /** For PATs: the endpoints it may call (`"POST /api/rollouts/{id}/start"`), if limited. */
  allowedEndpoints?: string[];
  /** When the token stops being valid (ms since the epoch): a live connection ends then. */
  expiresAt?: number;
}

export const TENANT_ID = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const DEFAULT_TENANT = 'default';
