import type { Knex } from 'knex';

/**
 * Calls the audit trail queues (reads and refused calls: every call not recorded in its
 * route's own transaction) are appended as one chain link per batch and tenant instead of
 * one row each (docs/audit.md, "How calls are stored").
 *
 * A link row holds the batch as JSON text in `calls`, one array per call in the column
 * order of `audit_calls` from `id` to `source_address`, and each call's sequence number in
 * `seqs`; its `seq` is its first call's. Its digest covers
 * the previous link's hash, its own header, every sequence number and the exact text, so
 * altering, adding or dropping any call breaks the chain at that link. A row per call cost
 * Postgres about 30 µs (heap, four index entries, its own digest); a link costs a few µs
 * per call, and the API server builds one string instead of thirteen arrays.
 *
 * A link also lists the distinct actors, resource ids and request ids of its calls, so a
 * search for one opens only the links that hold it (reading a link's calls costs ~2.5 µs a
 * call; checking its lists, a few µs a link).
 *
 * `audit_calls` is the log as callers see it: one row per call, whether it was written as
 * a row of its own or as part of a link, with `link_seq` the seq of the row that holds it
 * and the link's lists (null for a row of its own).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE audit_events
      ADD COLUMN seqs bigint[],
      ADD COLUMN calls text,
      ADD COLUMN actors text[],
      ADD COLUMN resource_ids text[],
      ADD COLUMN request_ids text[],
      ALTER COLUMN actor_type DROP NOT NULL,
      ALTER COLUMN method DROP NOT NULL,
      ALTER COLUMN path DROP NOT NULL,
      ALTER COLUMN status DROP NOT NULL,
      -- NOT VALID: every existing row is a call of its own; checking them would scan the table.
      ADD CONSTRAINT audit_events_call_or_link CHECK (
        CASE WHEN calls IS NULL
             THEN seqs IS NULL AND actor_type IS NOT NULL AND method IS NOT NULL AND path IS NOT NULL
                  AND status IS NOT NULL
             ELSE seqs[1] = seq
        END) NOT VALID;
    -- A link's text is written once and read rarely: compressing it would cost more CPU
    -- on every append than the disk it saves is worth.
    ALTER TABLE audit_events ALTER COLUMN calls SET STORAGE EXTERNAL;

    CREATE FUNCTION audit_link_digest(prev bytea, e audit_events) RETURNS bytea
    LANGUAGE sql IMMUTABLE AS $$
      SELECT CASE WHEN e.calls IS NULL THEN audit_event_digest(prev, e)
             ELSE sha256(coalesce(prev, ''::bytea) || convert_to(ROW(
               e.seq, e.id, e.chain, e.tenant_id, (extract(epoch FROM e.occurred_at) * 1000000)::bigint,
               e.seqs, e.calls, e.actors, e.resource_ids, e.request_ids
             )::text, 'UTF8'))
             END
    $$;

    -- One link: n calls as JSON text, and the distinct actors, resource ids and request ids
    -- among them. Sequence numbers are taken under the chain's lock, like
    -- audit_append_chain's, so a link's calls follow each other in chain order.
    CREATE FUNCTION audit_append_calls(
      tenant text, calls text, n integer, actors text[], resource_ids text[], request_ids text[]
    ) RETURNS void
    LANGUAGE plpgsql AS $$
    DECLARE
      link audit_events;
    BEGIN
      link.chain := coalesce(tenant, '*');
      PERFORM pg_advisory_xact_lock(hashtextextended('audit_events:' || link.chain, 0));
      SELECT hash INTO link.prev_hash FROM audit_events WHERE chain = link.chain ORDER BY seq DESC LIMIT 1;
      link.seqs := ARRAY(SELECT nextval('audit_events_seq') FROM generate_series(1, n));
      link.seq := link.seqs[1];
      link.id := gen_random_uuid();
      link.tenant_id := tenant;
      link.occurred_at := now();
      link.calls := calls;
      link.actors := actors;
      link.resource_ids := resource_ids;
      link.request_ids := request_ids;
      link.hash := audit_link_digest(link.prev_hash, link);
      INSERT INTO audit_events SELECT link.*;
    END $$;

    -- One lateral expansion per row, so a page in seq order reads the rows in index order
    -- and stops once it has its calls (a UNION ALL of rows and links sorts them all first).
    CREATE VIEW audit_calls AS
    SELECT e.seq AS link_seq, c.seq, c.id, e.chain, e.tenant_id, c.occurred_at, c.actor_type, c.actor,
           c.actor_id, c.method, c.path, c.route, c.status, c.resource_type, c.resource_id, c.request_id,
           c.source_address, e.hash, e.actors AS link_actors, e.resource_ids AS link_resource_ids,
           e.request_ids AS link_request_ids
      FROM audit_events e
      CROSS JOIN LATERAL (
        SELECT e.seq, e.id, e.occurred_at, e.actor_type, e.actor, e.actor_id, e.method, e.path, e.route,
               e.status, e.resource_type, e.resource_id, e.request_id, e.source_address
         WHERE e.calls IS NULL
        UNION ALL
        SELECT b.seq, f[1]::uuid, f[2]::timestamptz, f[3], f[4], f[5], f[6], f[7], f[8], f[9]::integer, f[10],
               f[11], f[12], f[13]
          FROM ROWS FROM (unnest(e.seqs), json_array_elements(e.calls::json)) AS b(seq, call)
          -- OFFSET 0 keeps the planner from inlining the array into each f[i], which would
          -- parse every call once per field.
          CROSS JOIN LATERAL (SELECT ARRAY(SELECT json_array_elements_text(b.call)) AS f OFFSET 0) fields
         WHERE e.calls IS NOT NULL
      ) c;
  `);
}

/** Refused once a link exists: its calls have no other place, and the log must not lose them. */
export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DO $$ BEGIN
      IF EXISTS (SELECT 1 FROM audit_events WHERE calls IS NOT NULL) THEN
        RAISE EXCEPTION 'audit_events holds calls appended as links; going back would lose them';
      END IF;
    END $$;
    DROP VIEW IF EXISTS audit_calls;
    DROP FUNCTION IF EXISTS audit_append_calls(text, text, integer, text[], text[], text[]);
    DROP FUNCTION IF EXISTS audit_link_digest(bytea, audit_events);
    ALTER TABLE audit_events DROP CONSTRAINT IF EXISTS audit_events_call_or_link;
    ALTER TABLE audit_events DROP COLUMN IF EXISTS calls, DROP COLUMN IF EXISTS seqs, DROP COLUMN IF EXISTS actors,
      DROP COLUMN IF EXISTS resource_ids, DROP COLUMN IF EXISTS request_ids;
  `);
}
