import { TypedSearchAttributes, WorkflowIdConflictPolicy } from '@temporalio/common';
import type { RolloutState, RolloutStrategy, RolloutTarget } from '../domain/rollouts';
import { describeWindows } from '../domain/rollout-windows';
import { rolloutWorkflowId, type RolloutWorkflowInput } from './definitions';
import { configurationIdKey, rolloutIdKey, rolloutStateKey, tenantIdKey } from './search-attributes';

/** What starting a rollout's workflow reads of the rollout (a stored row has it all). */
export interface StartedRollout {
  id: string;
  tenant_id: string;
  state: RolloutState;
  name: string | null;
  description: string | null;
  version: number;
  target: RolloutTarget;
  strategy: RolloutStrategy;
  created_by: string;
  configuration_id: string;
  /** Absent from callers that never schedule. */
  start_at?: Date | null;
}

/**
 * How a rollout's workflow (`rollout:<id>`) is started, the same from the api (create, and
 * update-with-start on an operation) and from a worker's activity (a federated rollout's part
 * on this installation): an existing run is kept. `configurationName` names the configuration
 * in the summary and details the Temporal UI shows for the execution, instead of a bare id.
 */
export function rolloutStartOptions(rollout: StartedRollout, configurationName: string, taskQueue: string) {
  const args: [RolloutWorkflowInput] = [{ rolloutId: rollout.id, tenantId: rollout.tenant_id }];
  const { summary, details } = describeRollout(rollout, configurationName);
  return {
    staticSummary: summary,
    staticDetails: details,
    workflowId: rolloutWorkflowId(rollout.id),
    taskQueue,
    args,
    workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: tenantIdKey, value: rollout.tenant_id },
      { key: rolloutIdKey, value: rollout.id },
      { key: configurationIdKey, value: rollout.configuration_id },
      { key: rolloutStateKey, value: rollout.state },
    ]),
  };
}

/** "2 groups, 3 agents, labels env=prod": what a target names, in a few words. */
export function describeTarget(target: RolloutTarget): string {
  const parts = [];
  const count = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  if (target.groupIds.length) parts.push(count(target.groupIds.length, 'group'));
  if (target.agentIds.length) parts.push(count(target.agentIds.length, 'agent'));
  if (target.labelSelector)
    parts.push(
      `labels ${Object.entries(target.labelSelector)
        .map(([key, value]) => `${key}=${value}`)
        .join(',')}`,
    );
  return parts.join(', ');
}

/**
 * "batches of 10 %, bake 60 s, apply timeout 300 s, max failures 0 %, on failure pause", with
 * the health gate and the windows when it has them.
 */
export function describeStrategy(strategy: RolloutStrategy): string {
  const batches =
    strategy.batchSize !== undefined ? `batches of ${strategy.batchSize}` : `batches of ${strategy.batchPercent} %`;
  const gate = strategy.healthGate
    ? `, health gate ${strategy.healthGate.unhealthyAfterSeconds} s unhealthy or ${strategy.healthGate.maxDisconnects} disconnects`
    : '';
  const windows = strategy.windows?.length ? `, windows ${describeWindows(strategy.windows)}` : '';
  return `${batches}, bake ${strategy.bakeSeconds} s, apply timeout ${strategy.applyTimeoutSeconds} s, max failures ${strategy.maxFailurePercent} %, on failure ${strategy.onFailure}${gate}${windows}`;
}

/** The Temporal UI shows about a line of summary; longer names are cut there (in full in the details). */
const SUMMARY_CHARS = 200;

/**
 * How a rollout reads where operators meet its workflow (the Temporal UI's summary and
 * details): its name, the configuration and version, the target and the strategy, instead
 * of a bare id.
 */
export function describeRollout(
  rollout: StartedRollout,
  configurationName: string,
): { summary: string; details: string } {
  const what = `${configurationName} v${rollout.version} → ${describeTarget(rollout.target)}`;
  const full = rollout.name ? `${rollout.name}: ${what}` : `Rollout of ${what}`;
  const summary = full.length > SUMMARY_CHARS ? `${full.slice(0, SUMMARY_CHARS - 1)}…` : full;
  const target = rollout.target;
  const details = [
    `**${rollout.name ?? 'Rollout'}** (${rollout.id}, created by ${rollout.created_by})`,
    ...(rollout.description ? ['', rollout.description, ''] : []),
    `- Configuration: ${configurationName} (${rollout.configuration_id}), version ${rollout.version}`,
    `- Target: ${describeTarget(target)}`,
    ...(target.groupIds.length ? [`  - groups: ${target.groupIds.join(', ')}`] : []),
    ...(target.agentIds.length && target.agentIds.length <= 20 ? [`  - agents: ${target.agentIds.join(', ')}`] : []),
    `- Strategy: ${describeStrategy(rollout.strategy)}`,
    ...(rollout.start_at ? [`- Starts at: ${rollout.start_at.toISOString()}`] : []),
    `- REST: GET /api/rollouts/${rollout.id} (live progress), /api/rollouts/${rollout.id}/agents`,
  ].join('\n');
  return { summary, details };
}
