import type { Knex } from 'knex';

/** Groups, agents, configurations and their versions, policies, bootstrap tokens and pools. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE groups (
      id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id    text NOT NULL REFERENCES tenants(id),
      name         text NOT NULL,
      description  text NOT NULL DEFAULT '',
      labels       jsonb NOT NULL DEFAULT '{}',
      row_version  bigint NOT NULL DEFAULT 1,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      deleted_at   timestamptz
    );
    -- names are unique among live groups only, so a deleted group's name can be reused
    CREATE UNIQUE INDEX groups_live_name ON groups (tenant_id, name) WHERE deleted_at IS NULL;
    CREATE INDEX groups_tenant_created ON groups (tenant_id, created_at, id);

    CREATE TABLE agents (
      id                        uuid PRIMARY KEY,
      tenant_id                 text NOT NULL REFERENCES tenants(id),
      group_id                  uuid NOT NULL REFERENCES groups(id),
      name                      text NOT NULL DEFAULT '',
      labels                    jsonb NOT NULL DEFAULT '{}',
      status                    text NOT NULL DEFAULT 'enrolling',
      last_seen_at              timestamptz,
      description               jsonb NOT NULL DEFAULT '{}',
      capabilities              bigint NOT NULL DEFAULT 0,
      health                    jsonb,
      effective_config_hash     text,
      desired_configuration_id  uuid,
      desired_version           integer,
      desired_hash              text,
      applied_configuration_id  uuid,
      applied_version           integer,
      applied_hash              text,
      applied_status            text,
      applied_error             text,
      certificate_serial        text,
      certificate_not_after     timestamptz,
      certificate_revoked_at    timestamptz,
      enrolled_with_token_id    uuid,
      row_version               bigint NOT NULL DEFAULT 1,
      created_at                timestamptz NOT NULL DEFAULT now(),
      updated_at                timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX agents_tenant_id ON agents (tenant_id, id);
    CREATE INDEX agents_tenant_group ON agents (tenant_id, group_id, id);
    CREATE INDEX agents_tenant_status ON agents (tenant_id, status, id);
    CREATE INDEX agents_tenant_desired ON agents (tenant_id, desired_configuration_id, desired_version, id);
    CREATE INDEX agents_labels ON agents USING gin (labels jsonb_path_ops);

    CREATE TABLE configurations (
      id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id          text NOT NULL REFERENCES tenants(id),
      name               text NOT NULL,
      description        text NOT NULL DEFAULT '',
      format             text NOT NULL CHECK (format IN ('yaml', 'json', 'text')),
      labels             jsonb NOT NULL DEFAULT '{}',
      latest_version     integer NOT NULL DEFAULT 0,
      published_version  integer,
      managed_by         text,
      row_version        bigint NOT NULL DEFAULT 1,
      created_at         timestamptz NOT NULL DEFAULT now(),
      updated_at         timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, name)
    );
    CREATE INDEX configurations_tenant_created ON configurations (tenant_id, created_at, id);

    CREATE TABLE configuration_versions (
      configuration_id  uuid NOT NULL REFERENCES configurations(id),
      version           integer NOT NULL,
      state             text NOT NULL CHECK (state IN ('draft', 'published')),
      content           text NOT NULL,
      content_hash      text NOT NULL,
      author            text NOT NULL,
      created_at        timestamptz NOT NULL DEFAULT now(),
      published_at      timestamptz,
      published_by      text,
      PRIMARY KEY (configuration_id, version)
    );

    CREATE TABLE policies (
      id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id    text NOT NULL REFERENCES tenants(id),
      name         text NOT NULL,
      description  text NOT NULL DEFAULT '',
      expression   text NOT NULL,
      scope        jsonb NOT NULL DEFAULT '[]',
      state        text NOT NULL CHECK (state IN ('draft', 'approved')),
      enabled      boolean NOT NULL DEFAULT true,
      builtin      boolean NOT NULL DEFAULT false,
      author       text NOT NULL,
      approver     text,
      approved_at  timestamptz,
      row_version  bigint NOT NULL DEFAULT 1,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, name)
    );
    CREATE INDEX policies_tenant_created ON policies (tenant_id, created_at, id);

    CREATE TABLE token_pools (
      id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id          text NOT NULL REFERENCES tenants(id),
      name               text NOT NULL,
      group_id           uuid NOT NULL REFERENCES groups(id),
      token_ttl_seconds  integer NOT NULL,
      token_max_uses     integer NOT NULL,
      max_active_tokens  integer NOT NULL,
      created_by         text NOT NULL,
      created_at         timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, name)
    );
    CREATE INDEX token_pools_tenant_created ON token_pools (tenant_id, created_at, id);

    CREATE TABLE bootstrap_tokens (
      id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id   text NOT NULL REFERENCES tenants(id),
      name        text NOT NULL,
      token_hash  bytea NOT NULL UNIQUE,
      group_id    uuid NOT NULL REFERENCES groups(id),
      pool_id     uuid REFERENCES token_pools(id),
      expires_at  timestamptz NOT NULL,
      max_uses    integer NOT NULL CHECK (max_uses > 0),
      uses        integer NOT NULL DEFAULT 0 CHECK (uses <= max_uses),
      revoked_at  timestamptz,
      created_by  text NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX bootstrap_tokens_tenant_created ON bootstrap_tokens (tenant_id, created_at, id);
    CREATE INDEX bootstrap_tokens_pool ON bootstrap_tokens (pool_id) WHERE pool_id IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS bootstrap_tokens;
    DROP TABLE IF EXISTS token_pools;
    DROP TABLE IF EXISTS policies;
    DROP TABLE IF EXISTS configuration_versions;
    DROP TABLE IF EXISTS configurations;
    DROP TABLE IF EXISTS agents;
    DROP TABLE IF EXISTS groups;
  `);
}
