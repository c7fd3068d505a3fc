import { z } from './zod';

/**
 * What `String.prototype.trim` removes (JavaScript's white space and line terminators), as a
 * regex class: a pattern in the document says "trimmed" with it, exactly.
 */
export const TRIMMED_SPACE_CHARS =
  '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
export const TRIMMED_SPACE = `[${TRIMMED_SPACE_CHARS}]`;

/**
 * The one rule for caller-chosen text that is shown as a name or matched as a label: no
 * control characters (C0, DEL, C1: they corrupt terminals, logs and exports) and no lone
 * UTF-16 surrogates (Postgres stores UTF-8, which cannot hold them: the text would
 * silently turn into U+FFFD). The control rule is also the document's `pattern`;
 * surrogates cannot be written as one.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NO_CONTROL = /^[^\u0000-\u001f\u007f-\u009f]*$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export const TEXT_RULE = 'must not contain control characters or lone surrogates';

export const isPlainText = (value: string) => NO_CONTROL.test(value) && !LONE_SURROGATE.test(value);

/** `text` (a string schema with its own bounds) held to the rule above. */
export function plainText(text: z.ZodString = z.string()) {
  return text.refine(isPlainText, TEXT_RULE).openapi({ pattern: NO_CONTROL.source });
}
