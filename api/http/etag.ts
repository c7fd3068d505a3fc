import type { Context } from 'koa';
import { problems } from '../problems';

/** A strong ETag: the quoted hex of the row version. */
export function etagOf(rowVersion: number): string {
  return `"${rowVersion.toString(16).padStart(8, '0')}"`;
}

/** An entity-tag as RFC 9110 §8.8.3 spells it: optional `W/`, then a quoted run of etagc. */
const ENTITY_TAG = /^(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/;

function parseTags(header: string): string[] {
  return header
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
}

/** The version an entity-tag names, if it is exactly one of ours (strong comparison is character by character). */
function versionOf(tag: string): number | undefined {
  if (!/^"[0-9a-f]{8,16}"$/.test(tag)) return undefined;
  const version = Number.parseInt(tag.slice(1, -1), 16);
  // `"1"` is not `"00000001"`, and tags beyond any safe row version are none of ours.
  return Number.isSafeInteger(version) && etagOf(version) === tag ? version : undefined;
}

/**
 * The row versions `If-Match` accepts: undefined when the header is absent or `*`
 * (the write is unconditional), otherwise the versions of the strong tags listed.
 * RFC 9110 §13.1.1: the header is `*` alone or a list of entity-tags, compared strongly,
 * so weak (`W/`) or foreign tags never match (a header of only those fails with 412),
 * and anything else (`*` in a list, an unquoted tag) is a 400.
 */
export function ifMatchVersions(ctx: Context): number[] | undefined {
  const header = ctx.get('if-match');
  if (!header || header.trim() === '*') return undefined;
  const tags = parseTags(header);
  if (tags.length === 0 || !tags.every((tag) => ENTITY_TAG.test(tag))) {
    throw problems.validation([
      { path: 'header.if-match', message: 'must be * alone or a list of quoted entity-tags' },
    ]);
  }
  return tags.map(versionOf).filter((version) => version !== undefined);
}

/** True when `If-None-Match` already names the current representation (answer 304). */
export function notModified(ctx: Context, etag: string): boolean {
  const header = ctx.get('if-none-match');
  if (!header) return false;
  return parseTags(header).some((tag) => tag === '*' || tag.replace(/^W\//, '') === etag);
}
