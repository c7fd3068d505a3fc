import type { Knex } from 'knex';

/**
 * Receiver side of a handover: when the sender's handover ends (its deadline, as the sender
 * declared it when it asked). The bootstrap token a redeem issues expires then, so a sender
 * that vanished before telling us to cancel leaves no token that admits its agents for longer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE incoming_handovers ADD COLUMN deadline_at timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE incoming_handovers DROP COLUMN deadline_at`);
}
