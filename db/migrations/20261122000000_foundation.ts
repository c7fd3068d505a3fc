import type { Knex } from 'knex';

/** Tenants, personal access tokens, the hash-chained audit log and the event outbox. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tenants', (t) => {
    t.text('id').primary();
    t.text('display_name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.jsonb('labels').notNullable().defaultTo('{}');
    t.jsonb('settings').notNullable().defaultTo('{}');
    t.bigInteger('row_version').notNullable().defaultTo(1);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('pats', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('tenant_id').notNullable().references('tenants.id');
    t.text('name').notNullable();
    t.binary('token_hash').notNullable().unique();
    t.text('role').notNullable();
    t.jsonb('allowed_endpoints');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.text('created_by').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['tenant_id', 'name']);
    t.index(['tenant_id', 'created_at', 'id']);
  });

  await knex.raw(`
    CREATE TABLE audit_events (
      seq            bigint PRIMARY KEY,
      id             uuid NOT NULL DEFAULT gen_random_uuid(),
      chain          text NOT NULL,
      tenant_id      text,
      occurred_at    timestamptz NOT NULL DEFAULT now(),
      actor_type     text NOT NULL,
      actor          text,
      actor_id       text,
      method         text NOT NULL,
      path           text NOT NULL,
      route          text,
      status         integer NOT NULL,
      resource_type  text,
      resource_id    text,
      request_id     text,
      source_address text,
      prev_hash      bytea,
      hash           bytea NOT NULL
    );
    CREATE SEQUENCE audit_events_seq OWNED BY audit_events.seq;
    CREATE INDEX audit_events_chain_seq ON audit_events (chain, seq DESC);
    CREATE INDEX audit_events_tenant_actor ON audit_events (tenant_id, actor, seq DESC);
    CREATE INDEX audit_events_tenant_resource ON audit_events (tenant_id, resource_type, resource_id, seq DESC);

    -- The digest covers every recorded field and the previous row's hash. The fields enter
    -- as one record literal (ROW(...)::text quotes every field, so the text is unambiguous);
    -- times as epoch microseconds, so the session's TimeZone cannot change the text.
    -- audit_append and the trigger below compute the same expression inline (a function
    -- call per row would cost more than the hash); tests check that all three agree.
    CREATE FUNCTION audit_event_digest(prev bytea, e audit_events) RETURNS bytea
    LANGUAGE sql IMMUTABLE AS $$
      SELECT sha256(coalesce(prev, ''::bytea) || convert_to(ROW(
        e.seq, e.id, e.chain, e.tenant_id, (extract(epoch FROM e.occurred_at) * 1000000)::bigint,
        e.actor_type, e.actor, e.actor_id, e.method, e.path, e.route, e.status,
        e.resource_type, e.resource_id, e.request_id, e.source_address
      )::text, 'UTF8'))
    $$;

    -- One chain per tenant. Appends to a chain are serialised by an advisory lock held
    -- until commit, and sequence numbers are taken under it, so seq order is chain order.
    --
    -- audit_append(batch) is the fast path the service uses: per chain it takes the lock
    -- once (chains in sorted order, so two batches never deadlock), reads the tip once,
    -- links every row and inserts them in one statement. Any other INSERT is linked row by
    -- row by the trigger.
    CREATE FUNCTION audit_append(batch jsonb) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      e audit_events;
      rows audit_events[] := '{}';
      current_chain text;
      tip bytea;
    BEGIN
      FOR e IN
        SELECT r.* FROM jsonb_populate_recordset(NULL::audit_events, batch) WITH ORDINALITY AS r
         ORDER BY coalesce(r.tenant_id, '*'), ordinality
      LOOP
        e.chain := coalesce(e.tenant_id, '*');
        IF current_chain IS DISTINCT FROM e.chain THEN
          current_chain := e.chain;
          PERFORM pg_advisory_xact_lock(hashtextextended('audit_events:' || e.chain, 0));
          SELECT hash INTO tip FROM audit_events WHERE chain = e.chain ORDER BY seq DESC LIMIT 1;
        END IF;
        e.id := coalesce(e.id, gen_random_uuid());
        e.occurred_at := coalesce(e.occurred_at, now());
        e.seq := nextval('audit_events_seq');
        e.prev_hash := tip;
        e.hash := sha256(coalesce(tip, ''::bytea) || convert_to(ROW(
          e.seq, e.id, e.chain, e.tenant_id, (extract(epoch FROM e.occurred_at) * 1000000)::bigint,
          e.actor_type, e.actor, e.actor_id, e.method, e.path, e.route, e.status,
          e.resource_type, e.resource_id, e.request_id, e.source_address
        )::text, 'UTF8'));
        tip := e.hash;
        rows := rows || e;
      END LOOP;
      INSERT INTO audit_events SELECT * FROM unnest(rows);
    END $$;

    CREATE FUNCTION audit_events_link() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.chain := coalesce(NEW.tenant_id, '*');
      PERFORM pg_advisory_xact_lock(hashtextextended('audit_events:' || NEW.chain, 0));
      NEW.seq := nextval('audit_events_seq');
      SELECT hash INTO NEW.prev_hash FROM audit_events
        WHERE chain = NEW.chain ORDER BY seq DESC LIMIT 1;
      NEW.hash := sha256(coalesce(NEW.prev_hash, ''::bytea) || convert_to(ROW(
        NEW.seq, NEW.id, NEW.chain, NEW.tenant_id, (extract(epoch FROM NEW.occurred_at) * 1000000)::bigint,
        NEW.actor_type, NEW.actor, NEW.actor_id, NEW.method, NEW.path, NEW.route, NEW.status,
        NEW.resource_type, NEW.resource_id, NEW.request_id, NEW.source_address
      )::text, 'UTF8'));
      RETURN NEW;
    END $$;
    -- Rows that arrive already linked (from audit_append) skip the trigger without a call.
    -- A row inserted with a made-up hash is not linked, and verification reports it.
    CREATE TRIGGER audit_events_link BEFORE INSERT ON audit_events
      FOR EACH ROW WHEN (NEW.hash IS NULL) EXECUTE FUNCTION audit_events_link();

    CREATE FUNCTION audit_events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
    END $$;
    CREATE TRIGGER audit_events_no_update_delete BEFORE UPDATE OR DELETE ON audit_events
      FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
    CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
      FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
  `);

  await knex.raw(`
    CREATE TABLE events (
      seq         bigserial PRIMARY KEY,
      id          uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
      tenant_id   text NOT NULL,
      type        text NOT NULL,
      source      text NOT NULL,
      subject     text,
      time        timestamptz NOT NULL DEFAULT now(),
      data        jsonb NOT NULL DEFAULT '{}'
    );
    CREATE INDEX events_tenant_seq ON events (tenant_id, seq);
    CREATE INDEX events_time ON events (time);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS events;
    DROP TABLE IF EXISTS audit_events CASCADE;
    DROP FUNCTION IF EXISTS audit_events_link();
    DROP FUNCTION IF EXISTS audit_append(jsonb);
    DROP FUNCTION IF EXISTS audit_events_refuse_change();
  `);
  await knex.schema.dropTableIfExists('pats');
  await knex.schema.dropTableIfExists('tenants');
}
