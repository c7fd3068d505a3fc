import type { Knex } from 'knex';

/**
 * The internal certificate authority for agents' mTLS certificates and the leaf
 * certificates it issued. The CA's private key is stored only encrypted (AES-256-GCM
 * with Secrets:EncryptionKey); the issued-certificates table is what revocation reads.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE agent_ca (
      id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      active           boolean NOT NULL DEFAULT true,
      certificate_pem  text NOT NULL,
      key_iv           bytea NOT NULL,
      key_tag          bytea NOT NULL,
      key_ciphertext   bytea NOT NULL,
      created_at       timestamptz NOT NULL DEFAULT now(),
      retired_at       timestamptz,
      CHECK (active = (retired_at IS NULL))
    );
    -- one active CA per installation; a second guard behind the loader's advisory lock
    CREATE UNIQUE INDEX agent_ca_single_active ON agent_ca ((true)) WHERE active;

    CREATE TABLE agent_certificates (
      serial      text PRIMARY KEY,
      ca_id       uuid REFERENCES agent_ca(id),  -- null: signed by a CA loaded from files
      tenant_id   text NOT NULL REFERENCES tenants(id),
      agent_id    uuid NOT NULL,
      not_before  timestamptz NOT NULL,
      not_after   timestamptz NOT NULL,
      revoked_at  timestamptz,
      created_at  timestamptz NOT NULL DEFAULT now(),
      CHECK (not_after > not_before)
    );
    CREATE INDEX agent_certificates_agent ON agent_certificates (tenant_id, agent_id, created_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS agent_certificates;
    DROP TABLE IF EXISTS agent_ca;
  `);
}
