import type { Knex } from 'knex';
import type { Db } from './connection';

/**
 * The conditional UPDATE behind `If-Match`: the accepted row versions (and any state
 * precondition in `where`) sit in its WHERE, so of two writers holding the same ETag only
 * the first to commit wins. It bumps `row_version` and `updated_at`. Undefined when no row
 * matched; the caller then reads the row to tell 404, 412 and the rest apart.
 */
export async function updateVersioned<Row>(
  db: Db,
  table: string,
  match: Record<string, unknown>,
  versions: number[] | undefined,
  changes: Record<string, unknown>,
  // Adds conditions to the builder (knex changes it in place) and returns it, as knex chains do.
  where?: (query: Knex.QueryBuilder) => Knex.QueryBuilder,
): Promise<Row | undefined> {
  const query = db(table)
    .where(match)
    .update({ ...changes, row_version: db.raw('row_version + 1'), updated_at: db.fn.now() })
    .returning('*');
  where?.(query);
  if (versions) query.whereIn('row_version', versions);
  const [row] = (await query) as Row[];
  return row;
}
