import type { Knex } from 'knex';

/**
 * A federated rollout's part on this installation is marked as such: `peer_id` alone cannot
 * say it, since deleting a peer sets the `peer_id` of its parts to null (their rows are
 * kept), and such a part must not be taken for this installation's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE federated_rollout_installations
      ADD COLUMN local boolean NOT NULL DEFAULT false,
      ADD CONSTRAINT federated_rollout_installations_local_no_peer CHECK (NOT local OR peer_id IS NULL)
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE federated_rollout_installations DROP COLUMN local`);
}
