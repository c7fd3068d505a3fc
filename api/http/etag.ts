import type { Context } from 'koa';

/** A strong ETag: the quoted hex of the row version. */
export function etagOf(rowVersion: number): string {
  return `"${rowVersion.toString(16).padStart(8, '0')}"`;
}

function parseTags(header: string): string[] {
  return header
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
}

/**
 * The row versions `If-Match` accepts: undefined when the header is absent or `*`
 * (the write is unconditional), otherwise the versions of the strong tags listed.
 * Weak (`W/`) or foreign tags never match (RFC 9110 strong comparison), so a header of
 * only those yields an empty list and the write fails with 412.
 */
export function ifMatchVersions(ctx: Context): number[] | undefined {
  const header = ctx.get('if-match');
  if (!header || header.trim() === '*') return undefined;
  return parseTags(header)
    .filter((tag) => /^"[0-9a-f]{1,16}"$/.test(tag))
    .map((tag) => Number.parseInt(tag.slice(1, -1), 16))
    .filter((version) => Number.isSafeInteger(version)); // larger tags are none of ours
}

/** True when `If-None-Match` already names the current representation (answer 304). */
export function notModified(ctx: Context, etag: string): boolean {
  const header = ctx.get('if-none-match');
  if (!header) return false;
  return parseTags(header).some((tag) => tag === '*' || tag.replace(/^W\//, '') === etag);
}
