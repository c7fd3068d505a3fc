import type { Knex } from 'knex';

/**
 * Federation (docs/federation.md): this installation's identity, the peers it calls, the
 * agents it hands over (sender side) and receives (receiver side), and federated rollouts
 * with one row per installation they span.
 *
 * Secrets: a peer's credential (the other installation's `peer` PAT) and a handover's offer
 * (the receiver's bootstrap token, endpoint and CA) are sealed with platform/secrets.ts, the
 * context being the row's id; a handover token is stored as its SHA-256 hash.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- One row, written on first use (not here: test databases are copies of one template,
    -- and every installation needs an id of its own).
    CREATE TABLE installation (
      singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      id          uuid NOT NULL DEFAULT gen_random_uuid(),
      created_at  timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE federation_peers (
      id                      uuid PRIMARY KEY,
      tenant_id               text NOT NULL REFERENCES tenants(id),
      name                    text NOT NULL,
      base_url                text NOT NULL,
      credential_iv           bytea NOT NULL,
      credential_tag          bytea NOT NULL,
      credential_ciphertext   bytea NOT NULL,
      -- what the peer's GET /api/federation/ping answered last
      remote_installation_id  uuid,
      remote_name             text,
      remote_version          text,
      remote_agent_endpoint   text,
      healthy                 boolean NOT NULL DEFAULT false,
      last_ping_at            timestamptz,
      last_seen_at            timestamptz,
      last_latency_ms         integer,
      last_error              text,
      created_by              text NOT NULL,
      row_version             bigint NOT NULL DEFAULT 1,
      created_at              timestamptz NOT NULL DEFAULT now(),
      updated_at              timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, name)
    );
    CREATE INDEX federation_peers_tenant_created ON federation_peers (tenant_id, created_at, id);

    -- Sender side: agents this installation hands to a peer (workflow handover:<id>).
    -- state: running → completed (every agent handed over) | compensated (some or all
    -- stayed; the counts say how many moved) | failed (the receiver could not be prepared;
    -- no agent was offered anything).
    CREATE TABLE handovers (
      id                uuid PRIMARY KEY,
      tenant_id         text NOT NULL REFERENCES tenants(id),
      peer_id           uuid REFERENCES federation_peers(id) ON DELETE SET NULL,
      peer_name         text NOT NULL,
      state             text NOT NULL CHECK (state IN ('running', 'completed', 'compensated', 'failed')),
      deadline_seconds  integer NOT NULL CHECK (deadline_seconds > 0),
      reason            text,
      -- the receiver's offer { endpoint, caPem, token } once redeemed, sealed (context: the id)
      offer_iv          bytea,
      offer_tag         bytea,
      offer_ciphertext  bytea,
      created_by        text NOT NULL,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now(),
      finished_at       timestamptz
    );
    CREATE INDEX handovers_tenant_created ON handovers (tenant_id, created_at, id);

    -- state: pending → offered (the gateway offers the receiver's connection settings) →
    -- handed-over | withdrawn (compensated: the offer is gone, the agent stays) | skipped
    -- (not connected, or not this installation's to hand over). active while pending or
    -- offered: an agent is in at most one running handover.
    CREATE TABLE handover_agents (
      handover_id  uuid NOT NULL REFERENCES handovers(id) ON DELETE CASCADE,
      agent_id     uuid NOT NULL,
      state        text NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'offered', 'handed-over', 'withdrawn', 'skipped')),
      error        text,
      active       boolean NOT NULL DEFAULT true,
      updated_at   timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (handover_id, agent_id)
    );
    CREATE UNIQUE INDEX handover_agents_one_active ON handover_agents (agent_id) WHERE active;
    CREATE INDEX handover_agents_offered ON handover_agents (agent_id) WHERE state = 'offered';

    -- Receiver side: a handover a peer asked for (id = the sender's handover id). Its
    -- svc-ho token is single use and lives an hour; redeeming it issues the bootstrap token
    -- that only these agents (instance uids) may enrol with.
    CREATE TABLE incoming_handovers (
      id                  uuid PRIMARY KEY,
      tenant_id           text NOT NULL REFERENCES tenants(id),
      -- the sender, as its peer PAT is named here
      requested_by        text NOT NULL,
      agent_ids           uuid[] NOT NULL,
      token_hash          bytea UNIQUE,
      token_expires_at    timestamptz,
      redeemed_at         timestamptz,
      bootstrap_token_id  uuid REFERENCES bootstrap_tokens(id),
      state               text NOT NULL CHECK (state IN ('issued', 'redeemed', 'cancelled')),
      created_at          timestamptz NOT NULL DEFAULT now(),
      updated_at          timestamptz NOT NULL DEFAULT now()
    );
    -- A handover's bootstrap token: only these instance uids may enrol with it.
    ALTER TABLE bootstrap_tokens ADD COLUMN agent_ids uuid[];

    CREATE TABLE federated_rollouts (
      id                uuid PRIMARY KEY,
      tenant_id         text NOT NULL REFERENCES tenants(id),
      configuration_id  uuid NOT NULL REFERENCES configurations(id),
      version           integer NOT NULL,
      content_hash      text NOT NULL,
      name              text,
      description       text,
      mode              text NOT NULL CHECK (mode IN ('sequential', 'parallel')),
      state             text NOT NULL CHECK (state IN ('running', 'paused', 'completed', 'failed', 'aborted', 'rolling-back', 'rolled-back')),
      reason            text,
      created_by        text NOT NULL,
      row_version       bigint NOT NULL DEFAULT 1,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now(),
      finished_at       timestamptz
    );
    CREATE INDEX federated_rollouts_tenant_created ON federated_rollouts (tenant_id, created_at, id);

    -- One row per installation a federated rollout spans, in order. peer_id null: this
    -- installation. state: pending → running ⇄ paused → completed | failed | aborted |
    -- rolling-back → rolled-back; denied (a policy there refused it, problem holds its
    -- 422); unreachable while the peer does not answer (the federated rollout pauses).
    CREATE TABLE federated_rollout_installations (
      federated_rollout_id     uuid NOT NULL REFERENCES federated_rollouts(id) ON DELETE CASCADE,
      position                 integer NOT NULL,
      peer_id                  uuid REFERENCES federation_peers(id) ON DELETE SET NULL,
      installation_name        text NOT NULL,
      target                   jsonb NOT NULL,
      strategy                 jsonb NOT NULL,
      state                    text NOT NULL DEFAULT 'pending',
      rollout_id               uuid,
      remote_configuration_id  uuid,
      remote_version           integer,
      progress                 jsonb,
      problem                  jsonb,
      updated_at               timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (federated_rollout_id, position)
    );

    -- Receiver side of a federated rollout: the rollout a peer asked for, found again by its
    -- key (<origin installation id>:<federated rollout id>) so a retried call creates nothing twice.
    ALTER TABLE rollouts ADD COLUMN federation_key text;
    CREATE UNIQUE INDEX rollouts_federation_key ON rollouts (tenant_id, federation_key) WHERE federation_key IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX rollouts_federation_key;
    ALTER TABLE rollouts DROP COLUMN federation_key;
    DROP TABLE federated_rollout_installations;
    DROP TABLE federated_rollouts;
    ALTER TABLE bootstrap_tokens DROP COLUMN agent_ids;
    DROP TABLE incoming_handovers;
    DROP TABLE handover_agents;
    DROP TABLE handovers;
    DROP TABLE federation_peers;
    DROP TABLE installation;
  `);
}
