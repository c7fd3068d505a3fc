import type { Knex } from 'knex';

/**
 * A handover agent's own outcome for "withdrawn, and not seen since the offer" (`missing`):
 * at the deadline it had not arrived at the receiver, and it has not spoken here since it
 * was offered the receiver. It is connected to neither installation, which an operator must
 * hear about apart from the agents that simply stayed (`withdrawn`).
 *
 * The gateway reads an agent's last withdrawn handover when its settings are due again (to
 * offer it our CA back): an index by agent, so that read is one probe however many agents
 * handovers have moved.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE handover_agents DROP CONSTRAINT handover_agents_state_check;
    ALTER TABLE handover_agents ADD CONSTRAINT handover_agents_state_check
      CHECK (state IN ('pending', 'offered', 'handed-over', 'withdrawn', 'missing', 'skipped'));
    CREATE INDEX handover_agents_withdrawn ON handover_agents (agent_id, updated_at)
      WHERE state IN ('withdrawn', 'missing');
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX handover_agents_withdrawn;
    UPDATE handover_agents SET state = 'withdrawn' WHERE state = 'missing';
    ALTER TABLE handover_agents DROP CONSTRAINT handover_agents_state_check;
    ALTER TABLE handover_agents ADD CONSTRAINT handover_agents_state_check
      CHECK (state IN ('pending', 'offered', 'handed-over', 'withdrawn', 'skipped'));
  `);
}
