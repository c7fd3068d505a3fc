import type { Knex } from 'knex';

/**
 * What happened to each agent in each rollout, kept (docs/rollouts.md, A history per agent):
 * every push, report, timeout, deferral, health verdict, skip and rollback, one row each,
 * written in the transaction that did it. Events are pruned after their retention; this is
 * the record an operator reads per agent (`GET /api/agents/{id}/history`) or per agent of a
 * rollout (`GET /api/rollouts/{id}/agents/{agentId}/history`). `rollout_id` has no foreign
 * key: rollouts are never deleted, and the check would cost a lookup per row when a batch of
 * tens of thousands settles. One index serves both reads (an agent's entries, those of one
 * rollout among them: an agent's history is short beside a rollout's), so each row costs two
 * index entries, not three.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE agent_history (
      seq               bigserial PRIMARY KEY,
      tenant_id         text NOT NULL,
      agent_id          uuid NOT NULL,
      at                timestamptz NOT NULL DEFAULT now(),
      kind              text NOT NULL,
      rollout_id        uuid,
      batch             integer,
      configuration_id  uuid,
      version           integer,
      content_hash      text,
      detail            text
    );
    CREATE INDEX agent_history_agent ON agent_history (agent_id, seq);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE agent_history');
}
