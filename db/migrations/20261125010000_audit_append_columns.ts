import type { Knex } from 'knex';

/**
 * A cheaper append for the audit trail: one call per chain with one array per column.
 *
 * audit_append(jsonb) spent about as much Postgres CPU parsing its JSON into records and
 * linking them one by one in plpgsql as on the insert itself. Here the arrays are read
 * with unnest (about a third of the JSON's cost), every row's sequence number, id and the
 * text its digest covers come from one set-based SELECT, and only the chaining of hashes
 * runs as a loop. The digest is the same expression as audit_event_digest, so chains
 * written by either function verify alike; audit_append(jsonb) stays for replicas of the
 * previous version during a rolling upgrade.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION audit_append_chain(
      tenant text, occurred timestamptz[], actor_types text[], actors text[], actor_ids text[],
      methods text[], paths text[], routes text[], statuses integer[], resource_types text[],
      resource_ids text[], request_ids text[], sources text[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      this_chain text := coalesce(tenant, '*');
      seqs bigint[];
      ids uuid[];
      digested bytea[];
      prevs bytea[] := '{}';
      hashes bytea[] := '{}';
      tip bytea;
      bytes bytea;
    BEGIN
      -- Sequence numbers are taken under the chain's lock, so seq order is chain order.
      PERFORM pg_advisory_xact_lock(hashtextextended('audit_events:' || this_chain, 0));
      SELECT hash INTO tip FROM audit_events WHERE chain = this_chain ORDER BY seq DESC LIMIT 1;
      SELECT array_agg(r.seq ORDER BY r.ord), array_agg(r.id ORDER BY r.ord),
             array_agg(convert_to(ROW(
               r.seq, r.id, this_chain, tenant, (extract(epoch FROM r.occurred_at) * 1000000)::bigint,
               r.actor_type, r.actor, r.actor_id, r.method, r.path, r.route, r.status,
               r.resource_type, r.resource_id, r.request_id, r.source_address
             )::text, 'UTF8') ORDER BY r.ord)
        INTO seqs, ids, digested
        FROM (SELECT nextval('audit_events_seq') AS seq, gen_random_uuid() AS id, u.*
                FROM unnest(occurred, actor_types, actors, actor_ids, methods, paths, routes, statuses,
                            resource_types, resource_ids, request_ids, sources) WITH ORDINALITY
                  AS u(occurred_at, actor_type, actor, actor_id, method, path, route, status,
                       resource_type, resource_id, request_id, source_address, ord)) r;
      FOREACH bytes IN ARRAY digested LOOP
        prevs := prevs || tip;
        tip := sha256(coalesce(tip, ''::bytea) || bytes);
        hashes := hashes || tip;
      END LOOP;
      INSERT INTO audit_events (seq, id, chain, tenant_id, occurred_at, actor_type, actor, actor_id, method,
                                path, route, status, resource_type, resource_id, request_id, source_address,
                                prev_hash, hash)
      SELECT v.seq, v.id, this_chain, tenant, v.occurred_at, v.actor_type, v.actor, v.actor_id, v.method,
             v.path, v.route, v.status, v.resource_type, v.resource_id, v.request_id, v.source_address,
             v.prev_hash, v.hash
        FROM unnest(seqs, ids, occurred, actor_types, actors, actor_ids, methods, paths, routes, statuses,
                    resource_types, resource_ids, request_ids, sources, prevs, hashes)
          AS v(seq, id, occurred_at, actor_type, actor, actor_id, method, path, route, status,
               resource_type, resource_id, request_id, source_address, prev_hash, hash);
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    'DROP FUNCTION IF EXISTS audit_append_chain(text, timestamptz[], text[], text[], text[], text[], text[], text[], integer[], text[], text[], text[], text[])',
  );
}
