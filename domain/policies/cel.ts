import { Environment, type ParseResult } from '@marcbachmann/cel-js';

/**
 * The CEL environment every policy expression is checked and evaluated in. The four
 * variables and their types are the contract with policy authors (docs/policies.md):
 * an expression must type-check to `bool` against them. Integers are CEL `int` (BigInt
 * in JS); values that may be absent are declared with an empty value ('' or 0) rather
 * than null, so expressions need no null checks.
 */
export const CEL_TYPES = {
  /** Desired or applied configuration of an agent; '' / 0 when there is none. */
  AgentConfig: { configurationId: 'string', version: 'int', hash: 'string', status: 'string' },
  Agent: {
    id: 'string',
    name: 'string',
    groupId: 'string',
    status: 'string',
    labels: 'map<string, string>',
    desired: 'AgentConfig',
    applied: 'AgentConfig',
  },
  Configuration: {
    id: 'string',
    name: 'string',
    format: 'string',
    labels: 'map<string, string>',
    latestVersion: 'int',
    publishedVersion: 'int',
  },
  /** `data` is the parsed YAML/JSON content (null for text or unparseable content). */
  Version: {
    version: 'int',
    state: 'string',
    published: 'bool',
    contentHash: 'string',
    content: 'string',
    data: 'dyn',
    author: 'string',
  },
  /** The push being judged: batch size as a percentage and a count, and the target size. */
  Rollout: { batchPercent: 'int', batchSize: 'int', targetCount: 'int' },
} as const;

export const CEL_VARIABLES = {
  agent: 'Agent',
  configuration: 'Configuration',
  version: 'Version',
  rollout: 'Rollout',
} as const;

/** What an evaluation is given; field names and types follow CEL_TYPES. */
export interface AgentConfigFacts {
  configurationId: string;
  version: bigint;
  hash: string;
  status: string;
}

export interface PolicyContext {
  agent: {
    id: string;
    name: string;
    groupId: string;
    status: string;
    labels: Record<string, string>;
    desired: AgentConfigFacts;
    applied: AgentConfigFacts;
  };
  configuration: {
    id: string;
    name: string;
    format: string;
    labels: Record<string, string>;
    latestVersion: bigint;
    publishedVersion: bigint;
  };
  version: {
    version: bigint;
    state: string;
    published: boolean;
    contentHash: string;
    content: string;
    data: unknown;
    author: string;
  };
  rollout: { batchPercent: bigint; batchSize: bigint; targetCount: bigint };
}

export const MAX_EXPRESSION_LENGTH = 4096;

function buildEnvironment(): Environment {
  // Structural limits keep a hostile expression from costing much to parse or run.
  const env = new Environment({
    limits: { maxAstNodes: 500, maxDepth: 40, maxListElements: 200, maxMapEntries: 200, maxCallArguments: 8 },
  });
  for (const [name, fields] of Object.entries(CEL_TYPES)) env.registerType(name, { fields: { ...fields } });
  for (const [name, type] of Object.entries(CEL_VARIABLES)) env.registerVariable(name, type);
  return env;
}

const environment = buildEnvironment();

/** The first line of a cel-js error (its message adds a source excerpt) and where it is. */
export function celErrorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { summary, range } = error as Error & { summary?: string; range?: { start: number } };
  const text = summary ?? error.message.split('\n')[0] ?? error.message;
  return range ? `${text} (at offset ${range.start})` : text;
}

export type CheckResult = { ok: true } | { ok: false; message: string };

/** Type-checks an expression against the declared variables; it must yield `bool`. */
export function checkExpression(expression: string): CheckResult {
  if (expression.length > MAX_EXPRESSION_LENGTH)
    return { ok: false, message: `is longer than ${MAX_EXPRESSION_LENGTH} characters` };
  let result;
  try {
    result = environment.check(expression);
  } catch (error) {
    return { ok: false, message: celErrorMessage(error) };
  }
  if (!result.valid) return { ok: false, message: celErrorMessage(result.error) };
  if (result.type !== 'bool') return { ok: false, message: `must evaluate to bool, but its type is ${result.type}` };
  return { ok: true };
}

const compiled = new Map<string, ParseResult>();
const COMPILED_MAX = 1000;

/** Parses once per distinct expression (a small bounded cache: policies are few). */
function program(expression: string): ParseResult {
  let found = compiled.get(expression);
  if (!found) {
    found = environment.parse(expression);
    if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value!);
    compiled.set(expression, found);
  }
  return found;
}

export type Outcome = { allowed: true } | { allowed: false; error?: string };

/**
 * Runs a policy for one context. `false` denies; so does any error (a missing map key,
 * a bad regex, a stored expression that no longer type-checks): a policy that cannot
 * say yes says no.
 */
export function runExpression(expression: string, context: PolicyContext): Outcome {
  try {
    const value: unknown = program(expression)(context);
    if (value === true) return { allowed: true };
    if (value === false) return { allowed: false };
    return { allowed: false, error: `the expression returned ${typeof value}, not bool` };
  } catch (error) {
    return { allowed: false, error: celErrorMessage(error) };
  }
}
