import type { Knex } from 'knex';

/**
 * Searching the audit log for an actor or resource id reads an index again.
 *
 * Since calls are appended as links (20261128000000_audit_call_batches), a call inside a
 * link has no index entry of its own, so such a search read every row of the tenant's
 * chain. One GIN index now holds, for every row of `audit_events`, the actors and resource
 * ids a search can ask for: a link's lists of them, or a row of its own's single values.
 * `listAuditQuery` (db/repos/audit.ts) opens only the rows the index names when few do,
 * and walks the chain in seq order otherwise.
 *
 * Request ids are not indexed: unlike actors and resources, every call has its own, so an
 * entry each would cost every read (~2.4 µs of Postgres a call, `npm run bench:audit`).
 * Rows alone never indexed them either.
 *
 * The index is on expressions of the stored columns, not on columns of their own: nothing
 * is stored that the chain's digests do not cover, so no value can be hidden from a search
 * without breaking the chain. `audit_calls` lists those expressions as `row_actors` and
 * `row_resource_ids` (they replace the link-only `link_actors` and `link_resource_ids`).
 *
 * The two b-tree indexes on (tenant, actor) and (tenant, resource) served searches over
 * rows only; no query reads them since links, and each write paid for both.
 */
const SEARCHED = { actors: 'actor', resource_ids: 'resource_id' } as const;

/** The values a search can ask a row for: a link's list, or a row of its own's one value. */
const searched = (list: keyof typeof SEARCHED, table = '') =>
  `coalesce(${table}${list}, ARRAY[${table}${SEARCHED[list]}])`;

/** `audit_calls` as 20261128000000 defined it, with the row's lists as `listed` says. */
function callsView(listed: Record<keyof typeof SEARCHED | 'request_ids', string>): string {
  return `
    CREATE VIEW audit_calls AS
    SELECT e.seq AS link_seq, c.seq, c.id, e.chain, e.tenant_id, c.occurred_at, c.actor_type, c.actor,
           c.actor_id, c.method, c.path, c.route, c.status, c.resource_type, c.resource_id, c.request_id,
           c.source_address, e.hash, ${listed.actors}, ${listed.resource_ids}, ${listed.request_ids}
      FROM audit_events e
      CROSS JOIN LATERAL (
        SELECT e.seq, e.id, e.occurred_at, e.actor_type, e.actor, e.actor_id, e.method, e.path, e.route,
               e.status, e.resource_type, e.resource_id, e.request_id, e.source_address
         WHERE e.calls IS NULL
        UNION ALL
        SELECT b.seq, f[1]::uuid, f[2]::timestamptz, f[3], f[4], f[5], f[6], f[7], f[8], f[9]::integer, f[10],
               f[11], f[12], f[13]
          FROM ROWS FROM (unnest(e.seqs), json_array_elements(e.calls::json)) AS b(seq, call)
          CROSS JOIN LATERAL (SELECT ARRAY(SELECT json_array_elements_text(b.call)) AS f OFFSET 0) fields
         WHERE e.calls IS NOT NULL
      ) c`;
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP VIEW audit_calls;
    ${callsView({
      actors: `${searched('actors', 'e.')} AS row_actors`,
      resource_ids: `${searched('resource_ids', 'e.')} AS row_resource_ids`,
      request_ids: 'e.request_ids AS link_request_ids',
    })};
    CREATE INDEX audit_events_search ON audit_events
      USING gin ((${searched('actors')}), (${searched('resource_ids')}));
    DROP INDEX audit_events_tenant_actor;
    DROP INDEX audit_events_tenant_resource;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX audit_events_tenant_actor ON audit_events (tenant_id, actor, seq DESC);
    CREATE INDEX audit_events_tenant_resource ON audit_events (tenant_id, resource_type, resource_id, seq DESC);
    DROP INDEX audit_events_search;
    DROP VIEW audit_calls;
    ${callsView({
      actors: 'e.actors AS link_actors',
      resource_ids: 'e.resource_ids AS link_resource_ids',
      request_ids: 'e.request_ids AS link_request_ids',
    })};
  `);
}
