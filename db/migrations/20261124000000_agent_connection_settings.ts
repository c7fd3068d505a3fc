import type { Knex } from 'knex';

/**
 * What the gateway offered an agent in `connection_settings` (the hash of the settings
 * every agent gets, hex) and what the agent reported in `connection_settings_status`, so
 * settings are offered only when they differ from what the agent has, whichever replica it
 * reaches and however often it reconnects. And its WebSocket sessions started in the current
 * window, with the back-off that answers an agent that reconnects in a loop (flapping).
 * None is indexed, so writing them keeps updates HOT.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE agents
    ADD COLUMN settings_offered_hash text,
    ADD COLUMN settings_reported_hash text,
    ADD COLUMN settings_reported_status text,
    ADD COLUMN sessions_window_started_at timestamptz,
    ADD COLUMN sessions_in_window integer NOT NULL DEFAULT 0,
    ADD COLUMN backoff_until timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE agents
    DROP COLUMN settings_offered_hash,
    DROP COLUMN settings_reported_hash,
    DROP COLUMN settings_reported_status,
    DROP COLUMN sessions_window_started_at,
    DROP COLUMN sessions_in_window,
    DROP COLUMN backoff_until`);
}
