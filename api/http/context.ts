import type { ParameterizedContext } from 'koa';
import type { Principal } from '../auth/principal';

export interface AppState {
  requestId: string;
  /** Set once the caller is authenticated. */
  principal?: Principal;
  /** The matched route's template, e.g. `/api/pats/{id}` (for logs, metrics, audit). */
  route?: string;
  /** What the call acted on, for the audit trail. */
  resource?: { type: string; id?: string };
  /**
   * A caller with no principal whom the audit trail still names: the Git webhook (its
   * source's tenant once the path names a source, whether or not the token matched).
   */
  caller?: { type: 'webhook'; tenantId: string | null; name: string | null; id: string | null };
  /** Set when the audit row was written in the route's own transaction. */
  audited?: boolean;
}

export type AppContext = ParameterizedContext<AppState, { params: Record<string, string> }>;
