import type { Knex } from 'knex';

/**
 * The effective configuration each agent last reported (OpAMP `effective_config`), kept so
 * it can be compared with the desired one: its files by name, each redacted by the rule in
 * domain/effective-config.ts before it is written (no secret an agent reports is stored), or
 * only names and sizes when the whole is over 256 KiB. One row per agent, replaced when the
 * agent reports another hash.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE agent_effective_configs (
      agent_id uuid PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      hash text NOT NULL,
      files jsonb NOT NULL,
      kept boolean NOT NULL,
      redacted integer NOT NULL,
      reported_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE agent_effective_configs');
}
