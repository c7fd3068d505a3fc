import type { Knex } from 'knex';

/**
 * The operator console's sessions (docs/console.md): a person signed in through the OIDC
 * provider gets a random session secret in an httpOnly cookie; only its SHA-256 is stored,
 * with who they are as the provider said at sign-in. Any api replica serves any session.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE console_sessions (
      id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      secret_hash   bytea NOT NULL UNIQUE,
      tenant_id     text NOT NULL REFERENCES tenants(id),
      subject       text NOT NULL,
      display_name  text,
      roles         text[] NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      last_seen_at  timestamptz NOT NULL DEFAULT now(),
      expires_at    timestamptz NOT NULL
    );
    CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE console_sessions');
}
