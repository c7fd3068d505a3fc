import type { Knex } from 'knex';

/**
 * A Git source's own CA bundle (PEM), for a self-hosted server whose certificate an internal
 * CA issued: git trusts it for that source alone, in place of the system's store. Not a
 * secret (certificates are public), so stored as it was sent.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE git_sources ADD COLUMN ca_certificate text');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE git_sources DROP COLUMN ca_certificate');
}
