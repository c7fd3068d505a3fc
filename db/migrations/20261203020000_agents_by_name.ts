import type { Knex } from 'knex';

/**
 * The agents list sorted by name (`GET /api/agents?sort=name`, `-name`): each page a walk
 * of this index from the cursor, however many agents the tenant has.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX agents_tenant_name ON agents (tenant_id, name, id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX agents_tenant_name');
}
