import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../connection';

/** One API call as the audit trail records it. `seq`, `chain` and hashes are set by the database. */
export interface AuditRecord {
  tenant_id: string | null;
  occurred_at: Date;
  actor_type: 'oidc' | 'session' | 'pat' | 'anonymous' | 'webhook';
  actor: string | null;
  actor_id: string | null;
  method: string;
  path: string;
  route: string | null;
  status: number;
  resource_type: string | null;
  resource_id: string | null;
  request_id: string | null;
  source_address: string | null;
}

/** One call as `audit_calls` lists it; `hash` is that of the row holding it (`link_seq`). */
export interface AuditCall extends AuditRecord {
  link_seq: number;
  seq: number;
  id: string;
  chain: string;
  hash: Buffer;
}

/** A batch's records by chain (a tenant, or '*' for calls with none), chains in sorted order. */
function byChain(records: AuditRecord[]): Array<[tenant: string | null, rows: AuditRecord[]]> {
  const groups = new Map<string | null, AuditRecord[]>();
  for (const record of records) {
    const group = groups.get(record.tenant_id);
    if (group) group.push(record);
    else groups.set(record.tenant_id, [record]);
  }
  const chain = (tenant: string | null) => tenant ?? '*';
  return [...groups].sort(([a], [b]) => (chain(a) < chain(b) ? -1 : chain(a) > chain(b) ? 1 : 0));
}

/**
 * Appends each chain's records with `append`. A batch of several chains is one transaction
 * that locks them in sorted order, so two batches never deadlock and a failed batch leaves
 * no rows.
 */
async function appendByChain(
  db: Db,
  records: AuditRecord[],
  append: (trx: Db, tenant: string | null, rows: AuditRecord[]) => Promise<unknown>,
): Promise<void> {
  const chains = byChain(records);
  const appendAll = async (trx: Db) => {
    for (const [tenant, rows] of chains) await append(trx, tenant, rows);
  };
  if (chains.length > 1 && !db.isTransaction) await db.transaction(appendAll);
  else await appendAll(db);
}

/** The columns `audit_append_chain` takes as arrays, in its parameters' order and types. */
const APPENDED = [
  ['occurred_at', 'timestamptz'],
  ['actor_type', 'text'],
  ['actor', 'text'],
  ['actor_id', 'text'],
  ['method', 'text'],
  ['path', 'text'],
  ['route', 'text'],
  ['status', 'int'],
  ['resource_type', 'text'],
  ['resource_id', 'text'],
  ['request_id', 'text'],
  ['source_address', 'text'],
] as const satisfies ReadonlyArray<readonly [keyof AuditRecord, string]>;

const APPEND_SQL = `SELECT audit_append_chain(?::text, ${APPENDED.map(([, type]) => `?::${type}[]`).join(', ')})`;

/**
 * Appends records as rows of their own, each linked into its tenant's chain by
 * `audit_append_chain` (one call per chain, each column as one array parameter). A route's
 * write records its call this way, in its own transaction.
 */
export async function insertAudit(db: Db, records: AuditRecord[]): Promise<void> {
  await appendByChain(db, records, (trx, tenant, rows) => {
    const columns = APPENDED.map(([column]) => rows.map((row) => row[column]));
    // pg sends a JS array as a Postgres array, nulls included; knex's binding types have no such array.
    return trx.raw(APPEND_SQL, [tenant, ...columns] as Knex.RawBinding[]);
  });
}

/**
 * Appends records as one link per chain (`audit_append_calls`): the calls as JSON text,
 * one array each, in the column order the `audit_calls` view reads (an array, not an
 * object: a third fewer bytes to build, send, hash and store). The trail's queued calls
 * go this way.
 */
export async function appendAuditCalls(db: Db, records: AuditRecord[]): Promise<void> {
  await appendByChain(db, records, (trx, tenant, rows) => {
    const calls = rows.map((row) => [
      randomUUID(),
      row.occurred_at,
      row.actor_type,
      row.actor,
      row.actor_id,
      row.method,
      row.path,
      row.route,
      row.status,
      row.resource_type,
      row.resource_id,
      row.request_id,
      row.source_address,
    ]);
    const distinct = (values: Array<string | null>) => [...new Set(values)].filter((value) => value !== null);
    return trx.raw('SELECT audit_append_calls(?::text, ?::text, ?::int, ?::text[], ?::text[], ?::text[])', [
      tenant,
      JSON.stringify(calls),
      rows.length,
      distinct(rows.map((row) => row.actor)),
      distinct(rows.map((row) => row.resource_id)),
      distinct(rows.map((row) => row.request_id)),
    ] as Knex.RawBinding[]);
  });
}

export interface AuditFilters {
  actor?: string;
  actorType?: string;
  method?: string;
  status?: number;
  resourceType?: string;
  resourceId?: string;
  requestId?: string;
  seq?: number;
  from?: Date;
  to?: Date;
}

/** Applies every filter but the tenant to a query of `audit_calls`. */
function whereCallsMatch(db: Db, query: Knex.QueryBuilder, tenantId: string, f: AuditFilters): Knex.QueryBuilder {
  const listed = (list: string, value: string) => query.whereRaw('?? @> ARRAY[?]::text[]', [list, value]);
  // A request id is not indexed (it would cost every call an index entry); a row of its own has no list.
  const linkListing = (value: string) =>
    query.where((q) => {
      q.whereNull('link_request_ids').orWhereRaw('? = ANY(link_request_ids)', [value]);
    });
  if (f.actor) listed('row_actors', f.actor).where({ actor: f.actor });
  if (f.actorType) query.where({ actor_type: f.actorType });
  if (f.method) query.where({ method: f.method });
  if (f.status) query.where({ status: f.status });
  if (f.resourceType) query.where({ resource_type: f.resourceType });
  if (f.resourceId) listed('row_resource_ids', f.resourceId).where({ resource_id: f.resourceId });
  if (f.requestId) linkListing(f.requestId).where({ request_id: f.requestId });
  if (f.seq) {
    // Only the row that holds the call is opened, not every link below it.
    query
      .where({ seq: f.seq })
      .where('link_seq', db('audit_events').max('seq').where({ chain: tenantId }).where('seq', '<=', f.seq));
  }
  if (f.from) query.where('occurred_at', '>=', f.from);
  if (f.to) query.where('occurred_at', '<', f.to);
  return query;
}

/**
 * The lists of a row of `audit_events` that `audit_events_search` indexes, as its
 * expressions (20261129000000_audit_search_index): a link's list, or a row of its own's value.
 */
const INDEXED_LISTS = {
  actor: 'coalesce(actors, ARRAY[actor])',
  resourceId: 'coalesce(resource_ids, ARRAY[resource_id])',
} as const;

/** At most this many rows listing the searched values, and a search opens just those. */
const FEW_ROWS = 1_000;

/** The rows of a tenant's chain whose indexed lists hold every searched actor and resource id. */
function rowsListing(db: Db, tenantId: string, f: AuditFilters): Knex.QueryBuilder | undefined {
  const indexed = (['actor', 'resourceId'] as const).filter((filter) => f[filter] !== undefined);
  if (indexed.length === 0) return undefined;
  const rows = db('audit_events').where({ chain: tenantId });
  for (const filter of indexed) rows.whereRaw(`${INDEXED_LISTS[filter]} @> ARRAY[?]::text[]`, [f[filter]!]);
  return rows;
}

/**
 * Whether the search asks for an actor or resource id that at most FEW_ROWS rows list: a
 * look at the index that stops at FEW_ROWS + 1. Tells `listAuditQuery` how to search.
 */
export async function fewRowsList(db: Db, tenantId: string, f: AuditFilters): Promise<boolean> {
  const rows = rowsListing(db, tenantId, f);
  if (!rows) return false;
  const probe = (await db
    .from(
      rows
        .select(db.raw('1'))
        .limit(FEW_ROWS + 1)
        .as('listing'),
    )
    .count({ n: '*' })
    .first()) as { n: string | number };
  return Number(probe.n) <= FEW_ROWS;
}

/**
 * The calls of a tenant's log (`audit_calls`) that match every filter, for a page (keyset
 * on `link_seq`, `seq`) or a count.
 *
 * With `fewRows` (what `fewRowsList` answered for the same filters), the query starts from
 * the rows that list the searched actor or resource id, newest first, found by the index,
 * and opens only them: an absent actor is answered from the index alone. Otherwise it
 * walks the chain in seq order and stops once it has its page, which is quick when the
 * value is common. The planner cannot choose between the two itself: it counts a link as
 * 100 matching calls, so it always expects the walk to fill a page at its first match.
 * A request id is looked for in every row's list, unindexed.
 */
export function listAuditQuery(db: Db, tenantId: string, f: AuditFilters, fewRows = false): Knex.QueryBuilder {
  const rows = fewRows ? rowsListing(db, tenantId, f) : undefined;
  if (!rows) return whereCallsMatch(db, db('audit_calls').select('*').where({ chain: tenantId }), tenantId, f);
  const calls = whereCallsMatch(
    db,
    db('audit_calls').select('*').whereRaw('link_seq = listing.listing_seq'),
    tenantId,
    f,
  ).toSQL();
  return db
    .select('calls.*')
    .from(rows.select({ listing_seq: 'seq' }).orderBy('seq', 'desc').as('listing'))
    .joinRaw(`CROSS JOIN LATERAL (${calls.sql}) AS calls`, [...calls.bindings]);
}

/** How many calls a row of `audit_events` holds: a link its `seqs`, a row of its own one. */
const CALLS_OF_ROW = 'coalesce(cardinality(seqs), 1)';

/**
 * How many calls `listAuditQuery` matches when no filter but the tenant applies: the sum
 * of the rows' call counts, without opening a link.
 */
export function countAuditCallsQuery(db: Db, tenantId: string): Knex.QueryBuilder {
  return db('audit_events')
    .where({ chain: tenantId })
    .select(db.raw(`coalesce(sum(${CALLS_OF_ROW}), 0)::bigint AS n`))
    .first();
}

export interface ChainVerdict {
  valid: boolean;
  checked: number;
  firstBrokenSeq: number | null;
}

/**
 * Recomputes every digest of a tenant's chain in the database (with the functions the
 * appends used) and checks each row links to the one before it. `checked` counts calls;
 * a broken link is named by its first call's seq.
 */
export async function verifyAuditChain(db: Db, chain: string): Promise<ChainVerdict> {
  const result = await db.raw(
    `SELECT coalesce(sum(calls), 0)::int AS checked,
            min(seq) FILTER (WHERE NOT ok) AS first_broken
       FROM (SELECT e.seq, ${CALLS_OF_ROW} AS calls,
                    e.prev_hash IS NOT DISTINCT FROM lag(e.hash) OVER w
                    AND e.hash = audit_link_digest(lag(e.hash) OVER w, e) AS ok
               FROM audit_events e
              WHERE e.chain = ?
             WINDOW w AS (ORDER BY e.seq)) checked`,
    [chain],
  );
  const row = result.rows[0] as { checked: number; first_broken: number | null };
  return { valid: row.first_broken === null, checked: row.checked, firstBrokenSeq: row.first_broken };
}
