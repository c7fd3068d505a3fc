/**
 * The reads policy evaluation needs, gathered from the repos of the tables they read
 * (agents, configurations, configuration_versions); no SQL of its own.
 */
export { findTargetConfiguration, type TargetConfigurationRow } from './configurations';
export { findTargetVersion, type TargetVersionRow } from './configuration-versions';
export {
  countTargetAgents,
  existingAgentIds,
  targetAgentsPage,
  type AgentTarget,
  type TargetAgentRow,
} from './agents/targets';
