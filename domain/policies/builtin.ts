/**
 * Policies every tenant gets, created the first time the tenant's policies are read or
 * evaluated. They are approved (by 'system') but disabled, so that nothing changes for a
 * tenant until it chooses to enable them. They cannot be edited, only enabled/disabled.
 */
export interface BuiltinPolicy {
  name: string;
  description: string;
  expression: string;
}

export const BUILTIN_AUTHOR = 'system';

export const BUILTIN_POLICIES: readonly BuiltinPolicy[] = [
  {
    name: 'no-prod-big-batch',
    description: 'Agents labelled env=prod receive a push only in batches of at most 10% of the target.',
    expression: '!(has(agent.labels.env) && agent.labels.env == "prod") || rollout.batchPercent <= 10',
  },
  {
    name: 'published-only',
    description: 'Only published configuration versions are pushed.',
    expression: 'version.published',
  },
  {
    name: 'healthy-agents-only',
    description: 'Only agents that are online receive a push.',
    expression: 'agent.status == "online"',
  },
];
