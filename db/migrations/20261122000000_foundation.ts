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

    -- The digest covers every recorded field and the previous row's hash. Times enter as
    -- epoch microseconds so that the session's TimeZone cannot change the text.
    CREATE FUNCTION audit_event_digest(prev bytea, e audit_events) RETURNS bytea
    LANGUAGE sql IMMUTABLE AS $$
      SELECT sha256(coalesce(prev, ''::bytea) || convert_to(jsonb_build_array(
        e.seq, e.id, e.chain, e.tenant_id,
        (extract(epoch FROM e.occurred_at) * 1000000)::bigint,
        e.actor_type, e.actor, e.actor_id, e.method, e.path, e.route, e.status,
        e.resource_type, e.resource_id, e.request_id, e.source_address
      )::text, 'UTF8'))
    $$;

    -- One chain per tenant. The advisory lock serialises appends to a chain until commit,
    -- and the sequence number is taken under it, so seq order is chain order.
    CREATE FUNCTION audit_events_link() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.chain := coalesce(NEW.tenant_id, '*');
      PERFORM pg_advisory_xact_lock(hashtextextended('audit_events:' || NEW.chain, 0));
      NEW.seq := nextval('audit_events_seq');
      SELECT hash INTO NEW.prev_hash FROM audit_events
        WHERE chain = NEW.chain ORDER BY seq DESC LIMIT 1;
      NEW.hash := audit_event_digest(NEW.prev_hash, NEW);
      RETURN NEW;
    END $$;
    CREATE TRIGGER audit_events_link BEFORE INSERT ON audit_events
      FOR EACH ROW EXECUTE FUNCTION audit_events_link();

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
    DROP FUNCTION IF EXISTS audit_events_refuse_change();
  `);
  await knex.schema.dropTableIfExists('pats');
  await knex.schema.dropTableIfExists('tenants');
}
