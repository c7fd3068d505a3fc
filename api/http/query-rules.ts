/**
 * Rules between query parameters, which an OpenAPI parameter list cannot hold (each
 * parameter has a schema of its own). Each rule is written once: it refuses a request (400
 * naming the parameter) and it is stated in the OpenAPI document, as `x-query-schema` on the
 * operation: a JSON Schema over the query as one object, so a client (or a fuzzer) can keep
 * to it.
 */
import type { FieldError } from '../problems';
import { z } from './zod';

export interface QueryRule {
  /** The refusal, when the query breaks the rule. */
  check(query: Record<string, unknown>): FieldError | undefined;
  /** The rule in JSON Schema, over the query as an object. */
  schema: Record<string, unknown>;
}

/** At most one of `a` and `b`. */
export const notBoth = (a: string, b: string): QueryRule => ({
  check: (query) =>
    query[a] !== undefined && query[b] !== undefined
      ? { path: 'query', message: `use either ${a} or ${b}, not both` }
      : undefined,
  schema: { not: { required: [a, b] } },
});

/** `a` only with `b`. */
export const requires = (a: string, b: string): QueryRule => ({
  check: (query) =>
    query[a] !== undefined && query[b] === undefined ? { path: `query.${a}`, message: `requires ${b}` } : undefined,
  schema: { dependentRequired: { [a]: [b] } },
});

/** A list pages by `offset` or by `cursor`, never both. */
const PAGING = notBoth('offset', 'cursor');

/** The rules of a route's query: its own, and paging's when it has both `offset` and `cursor`. */
export function queryRulesOf(query: z.ZodType | undefined, own: QueryRule[] = []): QueryRule[] {
  const shape = query instanceof z.ZodObject ? (query.shape as Record<string, unknown>) : {};
  return 'offset' in shape && 'cursor' in shape ? [PAGING, ...own] : own;
}

/** The document's statement of the rules (undefined when there are none). */
export function queryRulesSchema(rules: QueryRule[]): Record<string, unknown> | undefined {
  if (rules.length === 0) return undefined;
  return rules.length === 1 ? rules[0]!.schema : { allOf: rules.map((rule) => rule.schema) };
}
