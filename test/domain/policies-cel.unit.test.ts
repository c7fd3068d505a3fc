import { BUILTIN_POLICIES } from '../../domain/policies/builtin';
import { checkExpression, runExpression, type PolicyContext } from '../../domain/policies/cel';
import { contentData, policyDenied, rolloutFacts } from '../../domain/policies/evaluate';
import { problemOf } from '../../api/problems';

function context(
  overrides: {
    labels?: Record<string, string>;
    status?: string;
    batchPercent?: number;
    data?: unknown;
    state?: string;
  } = {},
): PolicyContext {
  const none = { configurationId: '', version: 0n, hash: '', status: '' };
  return {
    agent: {
      id: 'a1',
      name: 'edge-1',
      groupId: 'g1',
      status: overrides.status ?? 'online',
      labels: overrides.labels ?? {},
      desired: none,
      applied: none,
    },
    configuration: {
      id: 'c1',
      name: 'collector',
      format: 'yaml',
      labels: { team: 'obs' },
      latestVersion: 2n,
      publishedVersion: 1n,
    },
    version: {
      version: 2n,
      state: overrides.state ?? 'published',
      published: (overrides.state ?? 'published') === 'published',
      contentHash: 'abc',
      content: 'replicas: 3',
      data: overrides.data ?? null,
      author: 'alice',
    },
    rollout: { batchPercent: BigInt(overrides.batchPercent ?? 100), batchSize: 1n, targetCount: 10n },
  };
}

describe('type-checking policy expressions', () => {
  test.each([
    'agent.labels.env != "prod" || rollout.batchPercent <= 10',
    'has(agent.labels.env) && agent.labels["env"] == "prod"',
    'version.published && configuration.labels.team == "obs"',
    'version.data.replicas <= 5',
    'agent.desired.version < version.version && agent.applied.status != "FAILED"',
    'rollout.batchSize * 10 <= rollout.targetCount',
  ])('%s is a bool expression', (expression) => {
    expect(checkExpression(expression)).toEqual({ ok: true });
  });

  test('the built-in policies type-check', () => {
    for (const policy of BUILTIN_POLICIES) expect(checkExpression(policy.expression)).toEqual({ ok: true });
  });

  test.each([
    ['agent.nope == "x"', 'No such key: nope (at offset 6)'],
    ['rollout.batchPercent', 'must evaluate to bool, but its type is int'],
    ['agent.labels', 'must evaluate to bool, but its type is map<string, string>'],
    ['version.data.replicas', 'must evaluate to bool, but its type is dyn'],
    ['rollout.batchPercent + "x" == 1', 'no such overload: int + string'],
    ['user.admin', 'Unknown variable: user'],
    ['agent.status == ', 'Unexpected token: EOF'],
    ['agent.labels.env == 1', 'no such overload'],
  ])('%s is refused: %s', (expression, message) => {
    const result = checkExpression(expression);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain(message);
  });

  test('overlong expressions are refused without parsing', () => {
    expect(checkExpression(`true${' && true'.repeat(600)}`)).toEqual({
      ok: false,
      message: 'is longer than 4096 characters',
    });
  });
});

describe('running policy expressions', () => {
  const bigBatch = 'agent.labels.env != "prod" || rollout.batchPercent <= 10';

  test('labels and the batch percentage decide', () => {
    expect(runExpression(bigBatch, context({ labels: { env: 'prod' }, batchPercent: 10 }))).toEqual({ allowed: true });
    expect(runExpression(bigBatch, context({ labels: { env: 'prod' }, batchPercent: 11 }))).toEqual({ allowed: false });
    expect(runExpression(bigBatch, context({ labels: { env: 'dev' }, batchPercent: 100 }))).toEqual({ allowed: true });
  });

  test('a missing label is a runtime error, which denies with its message, unless the other side of || allows', () => {
    expect(runExpression(bigBatch, context({ batchPercent: 50 }))).toEqual({
      allowed: false,
      error: 'No such key: env (at offset 13)',
    });
    expect(runExpression(bigBatch, context({ batchPercent: 5 }))).toEqual({ allowed: true });
    const guarded = BUILTIN_POLICIES.find((p) => p.name === 'no-prod-big-batch')!.expression;
    expect(runExpression(guarded, context({ batchPercent: 50 }))).toEqual({ allowed: true });
    expect(runExpression(guarded, context({ labels: { env: 'prod' }, batchPercent: 50 }))).toEqual({ allowed: false });
  });

  test('parsed YAML and JSON content is `version.data`, whole numbers as int', () => {
    const yaml = contentData(
      'yaml',
      'replicas: 3\nexporters:\n  otlp:\n    endpoint: https://collector:4317\nratio: 0.5\n',
    );
    expect(runExpression('version.data.replicas <= 5 && version.data.ratio < 1.0', context({ data: yaml }))).toEqual({
      allowed: true,
    });
    expect(
      runExpression('version.data.exporters.otlp.endpoint.startsWith("https://")', context({ data: yaml })),
    ).toEqual({ allowed: true });
    expect(runExpression('!has(version.data.exporters.debug)', context({ data: yaml }))).toEqual({ allowed: true });
    const json = contentData('json', '{"replicas": 9, "tags": ["a", "b"]}');
    expect(runExpression('version.data.replicas <= 5', context({ data: json }))).toEqual({ allowed: false });
    expect(runExpression('size(version.data.tags) == 2 && "a" in version.data.tags', context({ data: json }))).toEqual({
      allowed: true,
    });
    expect(contentData('text', 'replicas: 3')).toBeNull();
    expect(contentData('json', '{not json')).toBeNull();
  });

  test('a policy over data that is absent denies with the error', () => {
    const outcome = runExpression('version.data.replicas <= 5', context({ data: null }));
    expect(outcome.allowed).toBe(false);
    expect(outcome).toHaveProperty('error');
  });

  test('a stored expression that no longer parses denies rather than throws', () => {
    expect(runExpression('agent.status ==', context())).toMatchObject({
      allowed: false,
      error: expect.stringContaining('Unexpected token'),
    });
  });
});

describe('the rollout variable', () => {
  test('a percentage implies a batch size, a size implies a percentage, neither is the whole target', () => {
    expect(rolloutFacts({ batchPercent: 10 }, 25)).toEqual({ batchPercent: 10n, batchSize: 3n, targetCount: 25n });
    expect(rolloutFacts({ batchPercent: 1 }, 5)).toEqual({ batchPercent: 1n, batchSize: 1n, targetCount: 5n });
    expect(rolloutFacts({ batchSize: 3 }, 20)).toEqual({ batchPercent: 15n, batchSize: 3n, targetCount: 20n });
    expect(rolloutFacts({ batchSize: 50 }, 20)).toEqual({ batchPercent: 100n, batchSize: 50n, targetCount: 20n });
    expect(rolloutFacts(undefined, 7)).toEqual({ batchPercent: 100n, batchSize: 7n, targetCount: 7n });
    // CEL's int: a fractional percentage (a strategy may give one) is rounded up, as its batch size is
    expect(rolloutFacts({ batchPercent: 2.5 }, 100)).toEqual({ batchPercent: 3n, batchSize: 3n, targetCount: 100n });
    expect(rolloutFacts({ batchPercent: 20, batchSize: 4 }, 100)).toEqual({
      batchPercent: 20n,
      batchSize: 4n,
      targetCount: 100n,
    });
  });
});

describe('the policy-denied problem', () => {
  test('names the first denial and lists every one', () => {
    const problem = problemOf(
      policyDenied({
        allowed: false,
        verdicts: [
          { agentId: 'a1', allowed: true, deniedBy: [] },
          {
            agentId: 'a2',
            allowed: false,
            deniedBy: [
              { policyId: 'p1', name: 'no-prod-big-batch' },
              { policyId: 'p2', name: 'other', error: 'No such key: env' },
            ],
          },
        ],
      })!,
    );
    expect(problem.slug).toBe('policy-denied');
    expect(problem.status).toBe(422);
    expect(problem.title).toBe('Policy denied the push');
    expect(problem.detail).toBe("Policy 'no-prod-big-batch' denied the push to agent a2. 1 more denial in violations.");
    expect(problem.extensions).toEqual({
      policyId: 'p1',
      agentId: 'a2',
      violations: [
        { policyId: 'p1', name: 'no-prod-big-batch', agentId: 'a2' },
        { policyId: 'p2', name: 'other', error: 'No such key: env', agentId: 'a2' },
      ],
    });
    expect(policyDenied({ allowed: true, verdicts: [{ agentId: 'a1', allowed: true, deniedBy: [] }] })).toBeUndefined();
  });

  test('lists the first 1,000 denials of a wide push and counts them all', () => {
    const verdicts = Array.from({ length: 100_000 }, (_, i) => ({
      agentId: `a${i}`,
      allowed: false,
      deniedBy: [{ policyId: 'p1', name: 'healthy-agents-only' }],
    }));
    const problem = problemOf(policyDenied({ allowed: false, verdicts })!);
    expect(problem.detail).toBe(
      "Policy 'healthy-agents-only' denied the push to agent a0. 99999 more denials; the first 1000 are in violations.",
    );
    expect(problem.extensions).toMatchObject({ policyId: 'p1', agentId: 'a0', violationCount: 100_000 });
    const violations = problem.extensions.violations as Array<{ agentId: string }>;
    expect(violations).toHaveLength(1000);
    expect(violations.at(-1)).toEqual({ policyId: 'p1', name: 'healthy-agents-only', agentId: 'a999' });
  });
});
