import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { problems } from '../problems';

/**
 * A strong ETag: the quoted hex of the row version. For a body with live fields (fields that
 * move without the row version: a rollout's progress, a peer's health), the hex is followed by
 * `.` and a digest of that body, so a revalidation (`If-None-Match`) sees those fields move.
 */
export function etagOf(rowVersion: number, liveBody?: unknown): string {
  const version = rowVersion.toString(16).padStart(8, '0');
  if (liveBody === undefined) return `"${version}"`;
  return `"${version}.${createHash('sha256').update(JSON.stringify(liveBody)).digest('base64url').slice(0, 16)}"`;
}

/** One of our tags: the row version's hex, and the live body's digest if any. */
const OUR_TAG = /^"([0-9a-f]{8,16})(?:\.[\w-]{16})?"$/;

/**
 * `If-Match` as RFC 9110 §13.1.1 spells it: `*` alone, or a list of entity-tags (optional
 * `W/`, then a quoted run of etagc; a comma ends a tag), empty list elements allowed; or
 * nothing at all, which is no precondition (Node cannot tell an empty header from none).
 * The document states the header with this pattern, so it is the one rule for both.
 */
export const IF_MATCH =
  /^[ \t]*(?:\*|(?:,[ \t]*)*(?:W\/)?"[\x21\x23-\x2b\x2d-\x7e\x80-\xff]*"(?:[ \t]*,(?:[ \t]*(?:W\/)?"[\x21\x23-\x2b\x2d-\x7e\x80-\xff]*")?)*)?[ \t]*$/;

function parseTags(header: string): string[] {
  return header
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
}

/**
 * The row version an entity-tag names, if it is one of ours. Its version part is compared
 * character by character (strongly); a live body's digest is not compared: a write is decided
 * on what operators change, and a rollout's progress moving must not refuse its pause.
 */
function versionOf(tag: string): number | undefined {
  const hex = OUR_TAG.exec(tag)?.[1];
  if (hex === undefined) return undefined;
  const version = Number.parseInt(hex, 16);
  // `"1"` is not `"00000001"`, and tags beyond any safe row version are none of ours.
  return Number.isSafeInteger(version) && etagOf(version) === `"${hex}"` ? version : undefined;
}

/** The problem of an `If-Match` that is not IF_MATCH (the route layer checks it for every route that takes one). */
export const ifMatchProblem = (header: string) =>
  header && !IF_MATCH.test(header)
    ? problems.validation([{ path: 'header.if-match', message: 'must be * alone or a list of quoted entity-tags' }])
    : undefined;

/**
 * The row versions `If-Match` accepts: undefined when the header is absent or `*`
 * (the write is unconditional), otherwise the versions of the strong tags listed.
 * RFC 9110 §13.1.1: the header is `*` alone or a list of entity-tags, compared strongly,
 * so weak (`W/`) or foreign tags never match (a header of only those fails with 412);
 * anything else (`*` in a list, an unquoted tag) was refused with 400 before (ifMatchProblem).
 */
export function ifMatchVersions(ctx: Context): number[] | undefined {
  const header = ctx.get('if-match');
  if (!header || header.trim() === '*') return undefined;
  return parseTags(header)
    .map(versionOf)
    .filter((version) => version !== undefined);
}

/** True when `If-None-Match` already names the current representation (answer 304). */
export function notModified(ctx: Context, etag: string): boolean {
  const header = ctx.get('if-none-match');
  if (!header) return false;
  return parseTags(header).some((tag) => tag === '*' || tag.replace(/^W\//, '') === etag);
}
