import type { Context } from 'koa';
import type { Knex } from 'knex';
import { problems } from '../problems';
import { z } from './zod';

/** Query members every list accepts; routes `.extend()` it with their filters. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(50).openapi({ description: 'Page size (1-1000, default 50).' }),
  offset: z.coerce.number().int().min(0).max(10_000_000).optional().openapi({ description: 'Rows to skip. Not with `cursor`.' }),
  cursor: z.string().max(512).optional().openapi({ description: 'Opaque cursor from `nextCursor` or the `Link` header. Not with `offset`.' }),
});
export type PageQuery = z.infer<typeof pageQuery>;

export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });

type Key = string | number;

function encodeCursor(values: Key[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

function decodeCursor(cursor: string, arity: number): Key[] {
  try {
    const values: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(values) &&
      values.length === arity &&
      values.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))
    ) {
      return values as Key[];
    }
  } catch {
    // fall through to the problem below
  }
  throw problems.validation([{ path: 'query.cursor', message: 'is not a cursor this list issued' }]);
}

export interface Page<Row> {
  rows: Row[];
  total: number;
  nextCursor: string | null;
  nextOffset: number | null;
}

/**
 * Runs a list query one page at a time. With a cursor (or neither) the page is found by
 * keyset on `keys` (row comparison on an index, so a deep page costs what the first does);
 * with `offset` by OFFSET. All keys sort the same way; the last must be unique.
 */
export async function paginate<Row>(
  query: Knex.QueryBuilder,
  page: PageQuery,
  keys: { columns: string[]; direction: 'asc' | 'desc'; valuesOf: (row: Row) => Key[] },
): Promise<Page<Row>> {
  if (page.offset !== undefined && page.cursor !== undefined) {
    throw problems.validation([{ path: 'query', message: 'use either offset or cursor, not both' }]);
  }
  const counted = query.clone().clearSelect().clearOrder().count({ n: '*' }).first();
  const rows = query.clone().orderBy(keys.columns.map((column) => ({ column, order: keys.direction }))).limit(page.limit + 1);
  if (page.cursor !== undefined) {
    const after = decodeCursor(page.cursor, keys.columns.length);
    const op = keys.direction === 'asc' ? '>' : '<';
    const columns = keys.columns.map(() => '??').join(', ');
    rows.whereRaw(`(${columns}) ${op} (${after.map(() => '?').join(', ')})`, [...keys.columns, ...after]);
  } else if (page.offset !== undefined) {
    rows.offset(page.offset);
  }
  const [found, count] = await Promise.all([rows as Promise<Row[]>, counted as Promise<{ n: string | number }>]);
  const more = found.length > page.limit;
  const pageRows = more ? found.slice(0, page.limit) : found;
  const last = pageRows[pageRows.length - 1];
  return {
    rows: pageRows,
    total: Number(count.n),
    nextCursor: more && last ? encodeCursor(keys.valuesOf(last)) : null,
    nextOffset: more && page.offset !== undefined ? page.offset + page.limit : null,
  };
}

/** Sets `X-Total-Count` and `Link: <...>; rel="next"`, and returns the body. */
export function respondPage<Row, Item>(ctx: Context, baseUrl: string, page: Page<Row>, present: (row: Row) => Item) {
  ctx.set('X-Total-Count', String(page.total));
  if (page.nextCursor) {
    const params = new URLSearchParams(ctx.querystring);
    if (page.nextOffset !== null) params.set('offset', String(page.nextOffset));
    else params.set('cursor', page.nextCursor);
    ctx.set('Link', `<${baseUrl}${ctx.path}?${params.toString()}>; rel="next"`);
  }
  return { items: page.rows.map(present), nextCursor: page.nextCursor };
}
