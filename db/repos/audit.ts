import type { Knex } from 'knex';
import type { Db } from '../connection';

/** One API call as the audit trail records it. `seq`, `chain` and hashes are set by the database. */
export interface AuditRecord {
  tenant_id: string | null;
  occurred_at: Date;
  actor_type: 'oidc' | 'pat' | 'anonymous' | 'webhook';
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

/** Appends records; `audit_append` links each into its tenant's chain. One JSON parameter per batch. */
export async function insertAudit(db: Db, records: AuditRecord[]): Promise<void> {
  if (records.length > 0) await db.raw('SELECT audit_append(?::jsonb)', [JSON.stringify(records)]);
}

export interface AuditFilters {
  actor?: string;
  actorType?: string;
  method?: string;
  status?: number;
  resourceType?: string;
  resourceId?: string;
  requestId?: string;
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
