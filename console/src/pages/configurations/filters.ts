/**
 * The configurations list's filters and page live in the URL
 * (`/configurations?q=nginx&format=yaml&label=team:web&cursor=…`), named as the API's own
 * query parameters, so any view of the list can be bookmarked, shared and reloaded.
 */
import type { Schemas } from '../../api/client';

export type Format = Schemas['Configuration']['format'];

export const FORMATS: readonly Format[] = ['yaml', 'json', 'text'];

export const PAGE_SIZE = 25;

export interface ConfigurationFilters {
  q?: string;
  format?: Format;
  /** `key:value`, the API's label filter. */
  label?: string;
  cursor?: string;
}

function isFormat(value: string | null): value is Format {
  return (FORMATS as readonly (string | null)[]).includes(value);
}

export function configurationFiltersFrom(params: URLSearchParams): ConfigurationFilters {
  const format = params.get('format');
  return {
    q: params.get('q') || undefined,
    format: isFormat(format) ? format : undefined,
    label: params.get('label') || undefined,
    cursor: params.get('cursor') || undefined,
  };
}

/** A version number from the URL (`?from=1&to=2`), or undefined when it is not one. */
export function versionFrom(params: URLSearchParams, name: string): number | undefined {
  const value = params.get(name) ?? '';
  return /^[1-9][0-9]{0,8}$/.test(value) ? Number(value) : undefined;
}
