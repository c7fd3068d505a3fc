import type { Knex } from 'knex';

/**
 * The fleet over time: once a minute the worker's census counts each tenant's agents (online,
 * reporting unhealthy, and enrolled at all) into one row, so the console can draw the last
 * day without anyone having watched it. Rows older than the longest window the API serves
 * (7 days) are deleted by the census itself.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE fleet_minutes (
      tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      minute timestamptz NOT NULL,
      online integer NOT NULL,
      unhealthy integer NOT NULL,
      enrolled integer NOT NULL,
      PRIMARY KEY (tenant_id, minute)
    );
    CREATE INDEX fleet_minutes_minute ON fleet_minutes (minute);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE fleet_minutes');
}
