import type { Knex } from 'knex';

/**
 * Git sources (a branch of a repository whose files become configurations) and their sync
 * runs. A configuration a source manages carries the source's id in `managed_by` (already
 * there), the file it came from in `source_path`, and `source_removed_at` once that file
 * disappeared from the branch. Each version a sync saves records the commit it came from.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE git_sources (
      id                        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id                 text NOT NULL REFERENCES tenants(id),
      name                      text NOT NULL,
      repo_url                  text NOT NULL,
      branch                    text NOT NULL,
      path                      text NOT NULL DEFAULT '',
      poll_interval_seconds     integer NOT NULL CHECK (poll_interval_seconds > 0),
      auto_publish              boolean NOT NULL DEFAULT false,
      paused                    boolean NOT NULL DEFAULT false,
      -- write-only credentials: a sealed JSON document (platform/secrets.ts, context = the source id)
      credentials_kind          text CHECK (credentials_kind IN ('https', 'ssh')),
      credentials_iv            bytea,
      credentials_tag           bytea,
      credentials_ciphertext    bytea,
      webhook_token_hash        bytea,
      webhook_token_created_at  timestamptz,
      -- optional { target, strategy } of a rollout started for every version a sync publishes
      rollout_template          jsonb,
      last_synced_sha           text,
      last_synced_at            timestamptz,
      created_by                text NOT NULL,
      row_version               bigint NOT NULL DEFAULT 1,
      created_at                timestamptz NOT NULL DEFAULT now(),
      updated_at                timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, name),
      CHECK ((credentials_kind IS NULL) = (credentials_ciphertext IS NULL))
    );
    CREATE INDEX git_sources_tenant_created ON git_sources (tenant_id, created_at, id);

    CREATE TABLE git_sync_runs (
      id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id    text NOT NULL REFERENCES tenants(id),
      source_id    uuid NOT NULL REFERENCES git_sources(id) ON DELETE CASCADE,
      trigger      text NOT NULL CHECK (trigger IN ('webhook', 'poll', 'manual')),
      commit_sha   text,
      status       text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
      -- [{ path, configurationId, name, change: created|updated|unchanged|removed, version }]
      changes      jsonb NOT NULL DEFAULT '[]',
      -- [{ path, error }]: files that failed; the others were applied
      file_errors  jsonb NOT NULL DEFAULT '[]',
      -- why the whole run failed (the repository could not be read), credentials redacted
      error        text,
      rollout_id   uuid,
      started_at   timestamptz NOT NULL DEFAULT now(),
      finished_at  timestamptz
    );
    CREATE INDEX git_sync_runs_source_started ON git_sync_runs (source_id, started_at DESC, id DESC);

    ALTER TABLE configurations
      ADD COLUMN source_path text,
      ADD COLUMN source_removed_at timestamptz;
    -- { sourceId, path, commitSha, author, message } of a version a sync saved
    ALTER TABLE configuration_versions ADD COLUMN provenance jsonb;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE configuration_versions DROP COLUMN provenance;
    ALTER TABLE configurations DROP COLUMN source_path, DROP COLUMN source_removed_at;
    DROP TABLE git_sync_runs;
    DROP TABLE git_sources;
  `);
}
