/**
 * The groups list's filters and page live in the URL
 * (`/groups?q=edge&label=team:web&includeDeleted=true&cursor=…`), named as the API's own
 * query parameters, so any view of the list can be bookmarked, shared and reloaded.
 */
export const PAGE_SIZE = 25;

export interface GroupFilters {
  /** A substring of the name. */
  q?: string;
  /** `key:value`, the API's label filter. */
  label?: string;
  /** Soft-deleted groups too; only `'true'` is ever in the URL. */
  includeDeleted?: 'true';
  cursor?: string;
}

export function groupFiltersFrom(params: URLSearchParams): GroupFilters {
  return {
    q: params.get('q') || undefined,
    label: params.get('label') || undefined,
    includeDeleted: params.get('includeDeleted') === 'true' ? 'true' : undefined,
    cursor: params.get('cursor') || undefined,
  };
}
