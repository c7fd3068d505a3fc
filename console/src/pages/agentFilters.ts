/**
 * The agents list's filters and page live in the URL (`/agents?status=online&q=web&cursor=…`),
 * so any view of the list can be bookmarked, shared and reloaded. The names are the API's
 * own query parameters, passed through as they are.
 */
import type { Schemas } from '../api/client';

export type AgentStatus = Schemas['Agent']['status'];

export const AGENT_STATUSES: readonly AgentStatus[] = [
  'online',
  'offline',
  'enrolling',
  'pending-approval',
  'revoked',
  'handed-over',
];

export const AGENT_HEALTHS = ['healthy', 'unhealthy', 'unknown'] as const;
export const APPLIED_STATUSES = ['APPLIED', 'APPLYING', 'FAILED'] as const;

export const PAGE_SIZE = 25;

export interface AgentFilters {
  status?: AgentStatus;
  q?: string;
  /** `key:value`, the API's label filter. */
  label?: string;
  groupId?: string;
  /** The desired configuration, and (with it) its version. */
  configurationId?: string;
  version?: string;
  /** By the last ComponentHealth reported (`unknown`: none yet). */
  health?: (typeof AGENT_HEALTHS)[number];
  /** By the status of the last configuration report. */
  applied?: (typeof APPLIED_STATUSES)[number];
  /** By name (`name`, `-name`); by id when absent. */
  sort?: (typeof AGENT_SORTS)[number];
  cursor?: string;
}

export const AGENT_SORTS = ['name', '-name'] as const;

const oneOf = <T extends string>(choices: readonly T[], value: string | null): T | undefined =>
  (choices as readonly (string | null)[]).includes(value) ? (value as T) : undefined;

export function filtersFrom(params: URLSearchParams): AgentFilters {
  return {
    status: oneOf(AGENT_STATUSES, params.get('status')),
    health: oneOf(AGENT_HEALTHS, params.get('health')),
    applied: oneOf(APPLIED_STATUSES, params.get('applied')),
    sort: oneOf(AGENT_SORTS, params.get('sort')),
    q: params.get('q') || undefined,
    label: params.get('label') || undefined,
    groupId: params.get('groupId') || undefined,
    configurationId: params.get('configurationId') || undefined,
    version: (params.get('configurationId') && params.get('version')) || undefined,
    cursor: params.get('cursor') || undefined,
  };
}

/** A list's filters as the URL's query (any page's filters: string members, empty ones left out). */
export function searchOf(filters: object): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value) params.set(name, String(value));
  return params;
}

/** The filters as `GET /api/agents` takes them (the version a number). */
export function agentQuery({ version, ...filters }: AgentFilters) {
  return { ...filters, ...(version !== undefined && { version: Number(version) }) };
}
