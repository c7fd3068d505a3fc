import { problems } from '../problems';
import { z } from './zod';

/**
 * Labels, as every labelled resource (tenant, group, agent, configuration) takes them, and
 * the `label=key:value` list filter that selects by them.
 */
const LABEL_KEY = /^[A-Za-z0-9._/-]{1,63}$/;

export const labelsSchema = z
  .record(z.string().regex(LABEL_KEY, 'label keys are 1-63 of A-Z a-z 0-9 . _ / -'), z.string().max(256))
  .refine((value) => Object.keys(value).length <= 64, 'at most 64 labels');

const labelSelector = z
  .string()
  .regex(/^[A-Za-z0-9._/-]{1,63}:.{0,256}$/s, 'must be key:value')
  .openapi({ description: '`key:value`; repeat the parameter to require several labels (all must match).' });

/** `label=k:v`, repeatable: the query string gives one string or several. */
export const labelQuery = z.union([labelSelector, z.array(labelSelector).max(20)]).optional();

/** The label pairs of a `label` query value, or undefined when none; a key named twice with two values is a 400. */
export function labelFilter(value: string | string[] | undefined): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const pairs: Record<string, string> = {};
  for (const selector of Array.isArray(value) ? value : [value]) {
    const at = selector.indexOf(':');
    const key = selector.slice(0, at);
    const wanted = selector.slice(at + 1);
    if (key in pairs && pairs[key] !== wanted) {
      throw problems.validation([{ path: 'query.label', message: `label '${key}' cannot equal two values at once` }]);
    }
    pairs[key] = wanted;
  }
  return pairs;
}
