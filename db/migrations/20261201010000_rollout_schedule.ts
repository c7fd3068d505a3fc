import type { Knex } from 'knex';

/**
 * When a rollout runs (docs/rollouts.md, When it runs): `start_at`, not before which its first
 * batch is pushed, and the state `scheduled` it waits in after its start. (Windows are part of
 * the strategy's JSON.)
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE rollouts ADD COLUMN start_at timestamptz;
    ALTER TABLE rollouts DROP CONSTRAINT rollouts_state_check;
    ALTER TABLE rollouts ADD CONSTRAINT rollouts_state_check CHECK (state IN
      ('pending', 'scheduled', 'running', 'paused', 'completed', 'failed', 'aborted', 'rolling-back', 'rolled-back'));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    UPDATE rollouts SET state = 'pending' WHERE state = 'scheduled';
    ALTER TABLE rollouts DROP CONSTRAINT rollouts_state_check;
    ALTER TABLE rollouts ADD CONSTRAINT rollouts_state_check CHECK (state IN
      ('pending', 'running', 'paused', 'completed', 'failed', 'aborted', 'rolling-back', 'rolled-back'));
    ALTER TABLE rollouts DROP COLUMN start_at;
  `);
}
