import type { Knex } from 'knex';
import * as foundation from './20261122000000_foundation';
import * as inventory from './20261122010000_inventory';
import * as agentCa from './20261122020000_agent_ca';
import * as agentGateway from './20261122030000_agent_gateway';
import * as rollouts from './20261122040000_rollouts';
import * as agentCertificateUsed from './20261123000000_agent_certificate_used';
import * as agentSession from './20261123010000_agent_session';
import * as agentConnectionSettings from './20261124000000_agent_connection_settings';
import * as rolloutName from './20261124010000_rollout_name';
import * as gitSources from './20261125000000_git_sources';
import * as auditAppendColumns from './20261125010000_audit_append_columns';
import * as gitSyncRunRollouts from './20261125020000_git_sync_run_rollouts';
import * as federation from './20261126000000_federation';
import * as incomingHandoverDeadline from './20261126010300_incoming_handover_deadline';
import * as consoleSessions from './20261127000000_console_sessions';
import * as federatedRolloutLocal from './20261126010400_federated_rollout_local';
import * as auditCallBatches from './20261128000000_audit_call_batches';
import * as auditSearchIndex from './20261129000000_audit_search_index';
import * as rolloutDeferredAgents from './20261130000000_rollout_deferred_agents';
import * as agentHealthGate from './20261201000000_agent_health_gate';
import * as rolloutSchedule from './20261201010000_rollout_schedule';
import * as agentHistory from './20261201020000_agent_history';
import * as eventRollout from './20261201030000_event_rollout';
import * as gitSourceCa from './20261202000000_git_source_ca';
import * as handoverMissingAgents from './20261202010000_handover_missing_agents';
import * as rolloutAgentsFillfactor from './20261203000000_rollout_agents_fillfactor';
import * as fleetMinutes from './20261203010000_fleet_minutes';
import * as agentsByName from './20261203020000_agents_by_name';
import * as agentEffectiveConfigs from './20261203030000_agent_effective_configs';

/**
 * Migrations are listed here rather than discovered on disk, so the same list runs under
 * tsx, jest and any bundler. Append new ones at the end; never rename or reorder.
 */
const migrations: Record<string, Knex.Migration> = {
  '20261122000000_foundation': foundation,
  '20261122010000_inventory': inventory,
  '20261122020000_agent_ca': agentCa,
  '20261122030000_agent_gateway': agentGateway,
  '20261122040000_rollouts': rollouts,
  '20261123000000_agent_certificate_used': agentCertificateUsed,
  '20261123010000_agent_session': agentSession,
  '20261124000000_agent_connection_settings': agentConnectionSettings,
  '20261124010000_rollout_name': rolloutName,
  '20261125000000_git_sources': gitSources,
  '20261125010000_audit_append_columns': auditAppendColumns,
  '20261125020000_git_sync_run_rollouts': gitSyncRunRollouts,
  '20261126000000_federation': federation,
  '20261126010300_incoming_handover_deadline': incomingHandoverDeadline,
  '20261127000000_console_sessions': consoleSessions,
  '20261126010400_federated_rollout_local': federatedRolloutLocal,
  '20261128000000_audit_call_batches': auditCallBatches,
  '20261129000000_audit_search_index': auditSearchIndex,
  '20261130000000_rollout_deferred_agents': rolloutDeferredAgents,
  '20261201000000_agent_health_gate': agentHealthGate,
  '20261201010000_rollout_schedule': rolloutSchedule,
  '20261201020000_agent_history': agentHistory,
  '20261201030000_event_rollout': eventRollout,
  '20261202000000_git_source_ca': gitSourceCa,
  '20261202010000_handover_missing_agents': handoverMissingAgents,
  '20261203000000_rollout_agents_fillfactor': rolloutAgentsFillfactor,
  '20261203010000_fleet_minutes': fleetMinutes,
  '20261203020000_agents_by_name': agentsByName,
  '20261203030000_agent_effective_configs': agentEffectiveConfigs,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
