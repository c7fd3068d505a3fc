import type { Knex } from 'knex';

/**
 * Rollouts and the agents each one targets. The rollout row is written by the workflow
 * (`rollout:<id>`) through activities: it is the durable record the API reads. Per-agent
 * work lives in `rollout_agents`, not in workflow history, so a rollout of 100,000 agents
 * keeps a short history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE rollouts (
      id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id         text NOT NULL REFERENCES tenants(id),
      configuration_id  uuid NOT NULL REFERENCES configurations(id),
      version           integer NOT NULL,
      content_hash      text NOT NULL,
      target            jsonb NOT NULL,
      strategy          jsonb NOT NULL,
      state             text NOT NULL CHECK (state IN ('pending', 'running', 'paused', 'completed', 'failed', 'aborted', 'rolling-back', 'rolled-back')),
      reason            text,
      current_batch     integer NOT NULL DEFAULT 0,
      created_by        text NOT NULL,
      row_version       bigint NOT NULL DEFAULT 1,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now(),
      started_at        timestamptz,
      finished_at       timestamptz
    );
    CREATE INDEX rollouts_tenant_created ON rollouts (tenant_id, created_at, id);
    CREATE INDEX rollouts_tenant_state ON rollouts (tenant_id, state, created_at, id);
    CREATE INDEX rollouts_tenant_configuration ON rollouts (tenant_id, configuration_id, created_at, id);

    -- state: pending (not pushed yet) → applying → succeeded | failed; skipped when the
    -- agent could not be pushed (gone, revoked, in another active rollout, denied).
    -- rollback_state: null, or pending → applying → succeeded | failed | skipped.
    -- active: while the rollout can still push to the agent (pending/running/paused/
    -- rolling-back); an agent is in at most one active rollout.
    CREATE TABLE rollout_agents (
      rollout_id                 uuid NOT NULL REFERENCES rollouts(id),
      agent_id                   uuid NOT NULL,
      batch                      integer,
      state                      text NOT NULL DEFAULT 'pending',
      error                      text,
      previous_configuration_id  uuid,
      previous_version           integer,
      previous_hash              text,
      rollback_state             text,
      rollback_error             text,
      active                     boolean NOT NULL DEFAULT true,
      added_at                   timestamptz NOT NULL DEFAULT now(),
      pushed_at                  timestamptz,
      finished_at                timestamptz,
      PRIMARY KEY (rollout_id, agent_id)
    );
    CREATE UNIQUE INDEX rollout_agents_one_active ON rollout_agents (agent_id) WHERE active;
    CREATE INDEX rollout_agents_batch ON rollout_agents (rollout_id, batch, agent_id);
    CREATE INDEX rollout_agents_pending ON rollout_agents (rollout_id, agent_id) WHERE state = 'pending';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS rollout_agents; DROP TABLE IF EXISTS rollouts;');
}
