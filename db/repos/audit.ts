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

export interface AuditRow extends AuditRecord {
  seq: number;
  id: string;
  chain: string;
  prev_hash: Buffer | null;
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
 * Appends records; `audit_append_chain` links each into its tenant's chain, one call per
 * chain with each column as one array parameter (Postgres reads arrays at a third of the
 * cost of the same rows as JSON). A batch of several chains is one transaction that locks
 * them in sorted order, so two batches never deadlock and a failed batch leaves no rows.
 */
export async function insertAudit(db: Db, records: AuditRecord[]): Promise<void> {
  const chains = byChain(records);
  const append = async (trx: Db) => {
    for (const [tenant, rows] of chains) {
      const columns = APPENDED.map(([column]) => rows.map((row) => row[column]));
      // pg sends a JS array as a Postgres array, nulls included; knex's binding types have no such array.
      await trx.raw(APPEND_SQL, [tenant, ...columns] as Knex.RawBinding[]);
    }
  };
  if (chains.length > 1 && !db.isTransaction) await db.transaction(append);
  else await append(db);
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

export function listAuditQuery(db: Db, tenantId: string, f: AuditFilters): Knex.QueryBuilder {
  const query = db('audit_events').select('*').where({ chain: tenantId });
  if (f.actor) query.where({ actor: f.actor });
  if (f.actorType) query.where({ actor_type: f.actorType });
  if (f.method) query.where({ method: f.method });
  if (f.status) query.where({ status: f.status });
  if (f.resourceType) query.where({ resource_type: f.resourceType });
  if (f.resourceId) query.where({ resource_id: f.resourceId });
  if (f.requestId) query.where({ request_id: f.requestId });
  if (f.seq) query.where({ seq: f.seq });
  if (f.from) query.where('occurred_at', '>=', f.from);
  if (f.to) query.where('occurred_at', '<', f.to);
  return query;
}

export interface ChainVerdict {
  valid: boolean;
  checked: number;
  firstBrokenSeq: number | null;
}

/**
 * Recomputes every digest of a tenant's chain in the database (with the same function
 * the insert trigger used) and checks each row links to the one before it.
 */
export async function verifyAuditChain(db: Db, chain: string): Promise<ChainVerdict> {
  const result = await db.raw(
    `SELECT count(*)::int AS checked,
            min(seq) FILTER (WHERE NOT ok) AS first_broken
       FROM (SELECT e.seq,
                    e.prev_hash IS NOT DISTINCT FROM lag(e.hash) OVER w
                    AND e.hash = audit_event_digest(lag(e.hash) OVER w, e) AS ok
               FROM audit_events e
              WHERE e.chain = ?
             WINDOW w AS (ORDER BY e.seq)) checked`,
    [chain],
  );
  const row = result.rows[0] as { checked: number; first_broken: number | null };
  return { valid: row.first_broken === null, checked: row.checked, firstBrokenSeq: row.first_broken };
}
