import type { Context } from 'koa';
import type { Knex } from 'knex';
import { problems } from '../problems';
import { decimalQuery, z } from './zod';
import { isUuid } from '../../db/uuid';

/**
 * The document's mark on a parameter whose only valid values are ones the service answered
 * before (`x-issued-by`: where they come from): a cursor, an event id. No schema can
 * describe them; a client takes them from the answer named.
 */
export const issuedBy = (member: string) => ({ 'x-issued-by': member });

/** Query members every list accepts; routes `.extend()` it with their filters. */
export const pageQuery = z.object({
  limit: decimalQuery(1, 1000).default(50).openapi({ description: 'Page size (1-1000, default 50).' }),
  offset: decimalQuery(0, 10_000_000)
    .optional()
    .openapi({ description: 'Rows to skip. Give `offset` or `cursor`, not both (400).' }),
  cursor: z
    .string()
    .max(512)
    .optional()
    .openapi({
      description: 'Opaque cursor from `nextCursor` or the `Link` header. Give `cursor` or `offset`, not both (400).',
      ...issuedBy('nextCursor'),
    }),
});
export type PageQuery = z.infer<typeof pageQuery>;

export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), nextCursor: z.string().nullable() });

type Key = string | number;

export interface SortKey {
  column: string;
  /** How the cursor holds it: timestamps as exact epoch microseconds (JS Dates hold ms). */
  type: 'bigint' | 'timestamp' | 'uuid' | 'text';
}

function validKey(key: SortKey, value: unknown): value is Key {
  switch (key.type) {
    case 'bigint':
    case 'timestamp':
      return Number.isSafeInteger(value);
    case 'uuid':
      return typeof value === 'string' && isUuid(value);
    case 'text':
      return typeof value === 'string' && value.length <= 1000 && !value.includes('\u0000');
  }
}

function encodeCursor(values: Key[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/** A cursor is only ever what this list issued: anything else is a 400, never a query. */
function decodeCursor(cursor: string, keys: SortKey[]): Key[] {
  try {
    const values: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(values) && values.length === keys.length && keys.every((key, i) => validKey(key, values[i]))) {
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

const keyAlias = (i: number) => `__page_key_${i}`;

/**
 * Exact counts of large results are remembered briefly. Counting 60,000 label matches
 * among 100,000 agents takes ~50 ms of Postgres CPU, thirty times the page itself; an
 * operator paging through (or a UI refreshing) such a list would pay it on every call.
 * Counts below LARGE_COUNT are recounted every time, so small lists are always exact.
 * A large count older than COUNT_FRESH_MS is still answered while one recount runs in the
 * background (concurrent callers share it), so only a cold count makes anyone wait; one
 * older than COUNT_MAX_AGE_MS is never answered. The key is the count's SQL and bindings,
 * which include the tenant and every filter.
 */
const LARGE_COUNT = 10_000;
const COUNT_FRESH_MS = 5_000;
const COUNT_MAX_AGE_MS = 30_000;
const COUNT_CACHE_SIZE = 1_000;
interface CachedCount {
  n: number;
  at: number;
  refreshing?: Promise<number>;
}
const largeCounts = new Map<string, CachedCount>();
const coldCounts = new Map<string, Promise<number>>();

function countNow(key: string, counted: Knex.QueryBuilder): Promise<number> {
  return Promise.resolve(counted).then((row: { n: string | number }) => {
    const n = Number(row.n);
    if (n >= LARGE_COUNT) {
      if (!largeCounts.has(key) && largeCounts.size >= COUNT_CACHE_SIZE)
        largeCounts.delete(largeCounts.keys().next().value!);
      largeCounts.set(key, { n, at: Date.now() });
    } else {
      largeCounts.delete(key);
    }
    return n;
  });
}

/** `counted` selects one row whose `n` is the count. */
async function countRows(counted: Knex.QueryBuilder): Promise<number> {
  const { sql, bindings } = counted.toSQL();
  const key = JSON.stringify([sql, bindings]);
  const cached = largeCounts.get(key);
  const age = cached ? Date.now() - cached.at : Infinity;
  if (cached && age < COUNT_FRESH_MS) return cached.n;
  if (cached && age < COUNT_MAX_AGE_MS) {
    cached.refreshing ??= countNow(key, counted)
      .catch(() => cached.n)
      .finally(() => (cached.refreshing = undefined));
    return cached.n;
  }
  // Cold (or too old): wait for a count, sharing it with anyone asking at the same time.
  let pending = coldCounts.get(key);
  if (!pending) {
    pending = countNow(key, counted).finally(() => coldCounts.delete(key));
    coldCounts.set(key, pending);
  }
  return pending;
}

/**
 * Runs a list query one page at a time. With a cursor (or neither) the page is found by
 * keyset on `keys` (row comparison on an index, so a deep page costs what the first does);
 * with `offset` by OFFSET. All keys sort the same way; together they must be unique.
 * The cursor holds the last row's key values exactly as the database compares them.
 * `query` selects its columns; the sort keys are added to them. `count`, when given,
 * selects the total as one row's `n` more cheaply than counting `query`'s rows would.
 */
export async function paginate<Row>(
  query: Knex.QueryBuilder,
  page: PageQuery,
  keys: { columns: SortKey[]; direction: 'asc' | 'desc' },
  count: Knex.QueryBuilder = query.clone().clearSelect().clearOrder().count({ n: '*' }).first(),
): Promise<Page<Row>> {
  // knex types Client.raw as returning `any`; it builds a Knex.Raw like knex.raw does.
  const raw = (sql: string, bindings: Knex.RawBinding[]) => query.client.raw(sql, bindings) as Knex.Raw;
  const rows = query
    .clone()
    .select(
      keys.columns.map((key, i) =>
        key.type === 'timestamp'
          ? raw('(extract(epoch FROM ??) * 1000000)::bigint AS ??', [key.column, keyAlias(i)])
          : raw('?? AS ??', [key.column, keyAlias(i)]),
      ),
    )
    .orderBy(keys.columns.map((key) => ({ column: key.column, order: keys.direction })))
    .limit(page.limit + 1);
  if (page.cursor !== undefined) {
    const after = decodeCursor(page.cursor, keys.columns);
    const op = keys.direction === 'asc' ? '>' : '<';
    const columns = keys.columns.map(() => '??').join(', ');
    const values = keys.columns.map((key) =>
      key.type === 'timestamp' ? "('epoch'::timestamptz + ?::bigint * interval '1 microsecond')" : '?',
    );
    rows.whereRaw(`(${columns}) ${op} (${values.join(', ')})`, [...keys.columns.map((k) => k.column), ...after]);
    // Implied by the row comparison, but a planner uses only this form on an index of the
    // first key when a later key is computed (as a call's seq inside an audit link is).
    if (keys.columns.length > 1) rows.whereRaw(`?? ${op}= ${values[0]}`, [keys.columns[0]!.column, after[0]!]);
  } else if (page.offset !== undefined) {
    rows.offset(page.offset);
  }
  const [found, total] = await Promise.all([rows as Promise<Record<string, unknown>[]>, countRows(count)]);
  const more = found.length > page.limit;
  const pageRows = more ? found.slice(0, page.limit) : found;
  const last = pageRows[pageRows.length - 1];
  return {
    rows: pageRows as Row[],
    total,
    nextCursor: more && last ? encodeCursor(keys.columns.map((_, i) => last[keyAlias(i)] as Key)) : null,
    nextOffset: more && page.offset !== undefined ? page.offset + page.limit : null,
  };
}

/** Sets `Link: <...>; rel="next"`: this request's query with the next page's cursor or offset. */
export function setNextLink(ctx: Context, baseUrl: string, next: { cursor: string } | { offset: number }): void {
  const params = new URLSearchParams(ctx.querystring);
  if ('offset' in next) params.set('offset', String(next.offset));
  else params.set('cursor', next.cursor);
  ctx.set('Link', `<${baseUrl}${ctx.path}?${params.toString()}>; rel="next"`);
}

/** Sets `X-Total-Count` and `Link: <...>; rel="next"`, and returns the body. */
export function respondPage<Row, Item>(ctx: Context, baseUrl: string, page: Page<Row>, present: (row: Row) => Item) {
  ctx.set('X-Total-Count', String(page.total));
  if (page.nextCursor) {
    setNextLink(ctx, baseUrl, page.nextOffset !== null ? { offset: page.nextOffset } : { cursor: page.nextCursor });
  }
  return { items: page.rows.map(present), nextCursor: page.nextCursor };
}
