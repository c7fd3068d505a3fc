import type { Knex } from 'knex';

/**
 * A handover agent's own outcome for "withdrawn, and not seen since the offer" (`missing`):
 * at the deadline it had not arrived at the receiver, and it has not spoken here since it
 * was offered the receiver. It is connected to neither installation, which an operator must
 * hear about apart from the agents that simply stayed (`withdrawn`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE handover_agents DROP CONSTRAINT handover_agents_state_check;
    ALTER TABLE handover_agents ADD CONSTRAINT handover_agents_state_check
      CHECK (state IN ('pending', 'offered', 'handed-over', 'withdrawn', 'missing', 'skipped'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE handover_agents SET state = 'withdrawn' WHERE state = 'missing';
    ALTER TABLE handover_agents DROP CONSTRAINT handover_agents_state_check;
    ALTER TABLE handover_agents ADD CONSTRAINT handover_agents_state_check
      CHECK (state IN ('pending', 'offered', 'handed-over', 'withdrawn', 'skipped'));
  `);
}
