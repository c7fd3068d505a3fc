import { problems } from '../problems';
import { isPlainText, plainText, TEXT_RULE } from './text';
import { z } from './zod';

/**
 * Labels, as every labelled resource (tenant, group, agent, configuration) takes them, and
 * the `label=key:value` list filter that selects by them.
 */

/**
 * `__proto__` is refused rather than stored: labels pass through plain objects (JSON.parse,
 * zod records, the filter below, jsonb rows read back), where assigning that key sets the
 * prototype instead, so it would vanish silently in one place and not another. zod's
 * record skips the key without a word, so the raw object is checked before it.
 */
const LABEL_KEY_SOURCE = '(?!__proto__(?![A-Za-z0-9._/-]))[A-Za-z0-9._/-]{1,63}';
const LABEL_KEY = new RegExp(`^${LABEL_KEY_SOURCE}$`);
const LABEL_KEY_RULE = 'label keys are 1-63 of A-Z a-z 0-9 . _ / - (not __proto__)';
const labelValue = plainText(z.string().max(256));

function refuseProtoKey(value: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof value === 'object' && value !== null && Object.hasOwn(value, '__proto__')) {
    ctx.addIssue({ code: 'custom', message: LABEL_KEY_RULE, path: ['__proto__'] });
  }
  return value;
}

/**
 * The document states the key rule as `propertyNames` (JSON Schema 2020-12, which
 * OpenAPI 3.1 uses); the metadata's type follows OpenAPI 3.0, which lacks it.
 */
const recordMetadata = { maxProperties: 64, propertyNames: { pattern: LABEL_KEY.source } } as { maxProperties: number };

export const labelsSchema = z.preprocess(
  refuseProtoKey,
  z
    .record(z.string().regex(LABEL_KEY, LABEL_KEY_RULE), labelValue)
    .refine((value) => Object.keys(value).length <= 64, 'at most 64 labels')
    .openapi(recordMetadata),
);

const SELECTOR = new RegExp(`^${LABEL_KEY_SOURCE}:.{0,256}$`, 's');

const labelSelector = z
  .string()
  .regex(SELECTOR, `must be key:value; ${LABEL_KEY_RULE}`)
  .refine((selector) => isPlainText(selector), `the value ${TEXT_RULE}`)
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
