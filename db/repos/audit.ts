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

/**
 * The calls of a tenant's log (`audit_calls`) that match every filter. A search for an
 * actor, resource id or request id asks each row's list of them first, so only the rows
 * that hold the value are opened; for actors and resource ids that list is indexed
 * (`audit_events_search`, a GIN index), so a count, or a page the planner expects to be
 * sparse, reads only those rows.
 */
export function listAuditQuery(db: Db, tenantId: string, f: AuditFilters): Knex.QueryBuilder {
  const query = db('audit_calls').select('*').where({ chain: tenantId });
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
