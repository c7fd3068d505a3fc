import { parse as parseYaml } from 'yaml';
import type { Db } from '../../db/connection';
import { enforcedPolicies, type PolicyRow } from '../../db/repos/policies';
import {
  countTargetAgents,
  existingAgentIds,
  findTargetConfiguration,
  findTargetVersion,
  targetAgentsPage,
  type AgentTarget,
  type TargetAgentRow,
  type TargetConfigurationRow,
  type TargetVersionRow,
} from '../../db/repos/policy-targets';
import { liveGroupIds } from '../../db/repos/groups';
import { NotFoundError, PolicyDeniedError } from '../errors';
import { BudgetExceeded, withinBudget } from './budget';
import { runExpression, type PolicyContext } from './cel';

export interface EvaluationInput {
  configurationId: string;
  version: number;
  /** Groups and agents (each agent once), or the agents of a rollout. */
  target: { groupIds?: string[]; agentIds?: string[] } | { rolloutId: string };
  /** The push's batch size, as a percentage of the target and/or a count (see rolloutFacts). */
  rollout?: { batchPercent?: number; batchSize?: number };
  /**
   * How many agents the whole push targets, when `target` is only a part of it (a rollout's
   * batch is judged with the rollout's batch facts, not as a push of its own).
   */
  totalTargetCount?: number;
}

export interface Denial {
  policyId: string;
  name: string;
  /** Set when the policy could not be evaluated (a CEL runtime error): that is a deny too. */
  error?: string;
}

export interface Verdict {
  agentId: string;
  allowed: boolean;
  deniedBy: Denial[];
}

export interface Evaluation {
  allowed: boolean;
  verdicts: Verdict[];
}

export interface Violation extends Denial {
  agentId: string;
}

const PAGE = 1000;

/**
 * The `rollout` variable. A push given as a percentage gets the batch size it implies
 * (at least 1), one given as a count gets the percentage it implies (rounded up); a push
 * given neither is judged as one batch of the whole target, the widest it could be. CEL
 * has the percentage as an int, so a fraction (a strategy's 2.5 %) is rounded up too.
 */
export function rolloutFacts(rollout: EvaluationInput['rollout'], targetCount: number): PolicyContext['rollout'] {
  const { batchPercent, batchSize } = rollout ?? {};
  const sizeOf = (percent: number) => (targetCount === 0 ? 0 : Math.max(1, Math.ceil((targetCount * percent) / 100)));
  const percentOf = (size: number) => (targetCount === 0 ? 0 : Math.min(100, Math.ceil((size * 100) / targetCount)));
  const percent =
    batchPercent !== undefined ? Math.ceil(batchPercent) : batchSize !== undefined ? percentOf(batchSize) : 100;
  const size = batchSize ?? (batchPercent !== undefined ? sizeOf(batchPercent) : targetCount);
  return { batchPercent: BigInt(percent), batchSize: BigInt(size), targetCount: BigInt(targetCount) };
}

/** CEL integers are BigInt: whole numbers in parsed content become `int`, the rest stay `double`. */
function toCel(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(toCel);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toCel(item)]));
  }
  return value ?? null;
}

/** `version.data`: the parsed YAML or JSON content; null for text or content that does not parse. */
export function contentData(format: string, content: string): unknown {
  try {
    if (format === 'json') return toCel(JSON.parse(content));
    if (format === 'yaml') return toCel(parseYaml(content));
  } catch {
    // unparseable content has no data; a policy that reads it fails, which denies
  }
  return null;
}

const stringMap = (labels: Record<string, unknown> | null | undefined): Record<string, string> =>
  Object.fromEntries(
    Object.entries(labels ?? {}).map(([key, value]) => [
      key,
      typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  );

function agentFacts(row: TargetAgentRow): PolicyContext['agent'] {
  return {
    id: row.id,
    name: row.name,
    groupId: row.group_id,
    status: row.status,
    labels: stringMap(row.labels),
    desired: {
      configurationId: row.desired_configuration_id ?? '',
      version: BigInt(row.desired_version ?? 0),
      hash: row.desired_hash ?? '',
      status: '',
    },
    applied: {
      configurationId: row.applied_configuration_id ?? '',
      version: BigInt(row.applied_version ?? 0),
      hash: row.applied_hash ?? '',
      status: row.applied_status ?? '',
    },
  };
}

function configurationFacts(row: TargetConfigurationRow): PolicyContext['configuration'] {
  return {
    id: row.id,
    name: row.name,
    format: row.format,
    labels: stringMap(row.labels),
    latestVersion: BigInt(row.latest_version),
    publishedVersion: BigInt(row.published_version ?? 0),
  };
}

function versionFacts(
  configuration: TargetConfigurationRow,
  row: TargetVersionRow,
  withData: boolean,
): PolicyContext['version'] {
  return {
    version: BigInt(row.version),
    state: row.state,
    published: row.state === 'published',
    contentHash: row.content_hash,
    content: row.content,
    data: withData ? contentData(configuration.format, row.content) : null,
    author: row.author,
  };
}

/** Unknown, deleted or other tenants' groups and agents are not found, as if they were a path. */
export async function checkTarget(
  db: Db,
  tenantId: string,
  target: { groupIds: string[]; agentIds: string[] },
): Promise<void> {
  const groups = await liveGroupIds(db, tenantId, target.groupIds);
  const missingGroup = target.groupIds.find((id) => !groups.has(id));
  if (missingGroup) throw new NotFoundError('group', missingGroup);
  const agents = await existingAgentIds(db, tenantId, target.agentIds);
  const missingAgent = target.agentIds.find((id) => !agents.has(id));
  if (missingAgent) throw new NotFoundError('agent', missingAgent);
}

const applies = (policy: PolicyRow, agent: TargetAgentRow) =>
  policy.scope.length === 0 || policy.scope.includes(agent.group_id);

/** How long one policy may take over one page (PAGE agents); typical CEL runs take microseconds. */
const POLICY_PAGE_BUDGET_MS = 1_000;

/**
 * Runs each policy over a page of agents within a time budget. A policy that exceeds it
 * denies every agent of the page it applies to, saying why, and stops stalling the API.
 */
function judgePage(policies: PolicyRow[], contexts: PolicyContext[], agents: TargetAgentRow[]): Verdict[] {
  const deniedBy: Denial[][] = agents.map(() => []);
  for (const policy of policies) {
    const denials: Array<[number, Denial]> = [];
    try {
      withinBudget(() => {
        agents.forEach((agent, i) => {
          if (!applies(policy, agent)) return;
          const outcome = runExpression(policy.expression, contexts[i]!);
          if (!outcome.allowed)
            denials.push([
              i,
              { policyId: policy.id, name: policy.name, ...(outcome.error ? { error: outcome.error } : {}) },
            ]);
        });
      }, POLICY_PAGE_BUDGET_MS);
    } catch (error) {
      if (!(error instanceof BudgetExceeded)) throw error;
      denials.length = 0;
      const denial = {
        policyId: policy.id,
        name: policy.name,
        error: `evaluation exceeded its time budget (${POLICY_PAGE_BUDGET_MS} ms for ${agents.length} agents)`,
      };
      agents.forEach((agent, i) => applies(policy, agent) && denials.push([i, denial]));
    }
    for (const [i, denial] of denials) deniedBy[i]!.push(denial);
  }
  return agents.map((agent, i) => ({ agentId: agent.id, allowed: deniedBy[i]!.length === 0, deniedBy: deniedBy[i]! }));
}

/**
 * Judges a push of a configuration version to a target against the tenant's enforced
 * policies (approved and enabled; scope empty or holding the agent's group). Every
 * applicable policy is run for every agent, so each verdict lists all that denied it.
 * Unknown configuration, version, group or agent: NotFoundError.
 */
export async function evaluatePolicies(db: Db, tenantId: string, input: EvaluationInput): Promise<Evaluation> {
  const configuration = await findTargetConfiguration(db, tenantId, input.configurationId);
  if (!configuration) throw new NotFoundError('configuration', input.configurationId);
  const version = await findTargetVersion(db, configuration.id, input.version);
  if (!version) {
    throw new NotFoundError(
      'configuration version',
      `${configuration.id}/${input.version}`,
      `Configuration '${configuration.id}' has no version ${input.version}.`,
    );
  }
  let target: AgentTarget;
  if ('rolloutId' in input.target) {
    target = { rolloutId: input.target.rolloutId };
  } else {
    target = {
      groupIds: [...new Set(input.target.groupIds ?? [])],
      agentIds: [...new Set(input.target.agentIds ?? [])],
    };
    await checkTarget(db, tenantId, target);
  }

  const policies = await enforcedPolicies(db, tenantId);
  const targetCount = input.totalTargetCount ?? (await countTargetAgents(db, tenantId, target));
  const shared = {
    configuration: configurationFacts(configuration),
    version: versionFacts(configuration, version, policies.length > 0),
    rollout: rolloutFacts(input.rollout, targetCount),
  };

  const verdicts: Verdict[] = [];
  let after: string | null = null;
  do {
    const page = await targetAgentsPage(db, tenantId, target, after, PAGE);
    verdicts.push(
      ...judgePage(
        policies,
        page.agents.map((agent) => ({ ...shared, agent: agentFacts(agent) })),
        page.agents,
      ),
    );
    after = page.after;
  } while (after);
  return { allowed: verdicts.every((verdict) => verdict.allowed), verdicts };
}

export function violationsOf(evaluation: Evaluation): Violation[] {
  return evaluation.verdicts.flatMap((verdict) =>
    verdict.deniedBy.map((denial) => ({ ...denial, agentId: verdict.agentId })),
  );
}

/** Denials a 422 lists; a start judging 100,000 agents must not answer megabytes. */
const LISTED_VIOLATIONS = 1000;

/**
 * The refusal of a denied evaluation (the api's 422 `policy-denied`): `detail` names the
 * first denying policy and agent, `policyId`/`agentId` identify them, and `violations` lists
 * the (policy, agent) denials — every one up to LISTED_VIOLATIONS; beyond, the first that
 * many, with `violationCount` the whole number.
 */
export function policyDenied(evaluation: Evaluation): PolicyDeniedError | undefined {
  const violations = violationsOf(evaluation);
  const first = violations[0];
  if (!first) return undefined;
  const more = violations.length - 1;
  const listed = violations.slice(0, LISTED_VIOLATIONS);
  const truncated = listed.length < violations.length;
  const detail =
    `Policy '${first.name}' denied the push to agent ${first.agentId}.` +
    (more === 0
      ? ''
      : truncated
        ? ` ${more} more denials; the first ${listed.length} are in violations.`
        : ` ${more} more denial${more === 1 ? '' : 's'} in violations.`);
  return new PolicyDeniedError(detail, {
    policyId: first.policyId,
    agentId: first.agentId,
    violations: listed,
    ...(truncated ? { violationCount: violations.length } : {}),
  });
}

/** For the rollout start: evaluates and throws PolicyDeniedError when any agent is denied. */
export async function assertPolicies(db: Db, tenantId: string, input: EvaluationInput): Promise<Evaluation> {
  const evaluation = await evaluatePolicies(db, tenantId, input);
  const problem = policyDenied(evaluation);
  if (problem) throw problem;
  return evaluation;
}
