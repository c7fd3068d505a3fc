/**
 * The bootstrap tokens list's filters and page live in the URL
 * (`/tokens?state=active&poolId=…&groupId=…&cursor=…`), named as the API's own query
 * parameters, so any view of the list can be bookmarked, shared and reloaded.
 */
import type { Schemas } from '../../api/client';

export type TokenState = Schemas['BootstrapToken']['state'];

export const TOKEN_STATES: readonly TokenState[] = ['active', 'revoked', 'expired', 'exhausted'];

export interface TokenFilters {
  state?: TokenState;
  poolId?: string;
  groupId?: string;
  cursor?: string;
}

function isTokenState(value: string | null): value is TokenState {
  return (TOKEN_STATES as readonly (string | null)[]).includes(value);
}

export function tokenFiltersFrom(params: URLSearchParams): TokenFilters {
  const state = params.get('state');
  return {
    state: isTokenState(state) ? state : undefined,
    poolId: params.get('poolId') || undefined,
    groupId: params.get('groupId') || undefined,
    cursor: params.get('cursor') || undefined,
  };
}
