import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// `.openapi()` on schemas, once for the whole process. Import `z` from here.
extendZodWithOpenApi(z);

export { z };

/*
 * What the document says of an object whose refinement ties members together: a zod
 * refinement is code, so its rule is stated beside it in JSON Schema, where a client (and
 * the fuzzer) can read it. Each is written with `not`, which client generators
 * (openapi-typescript) leave out of the types they make, where `oneOf`/`anyOf` would turn
 * one object type into a union of partial ones.
 */

/** Exactly one of two members. */
export const exactlyOneOf = (a: string, b: string) => ({
  allOf: [{ not: { required: [a, b] } }, { not: { properties: { [a]: NEVER, [b]: NEVER } } }],
});

/** The schema no value matches (JSON Schema's `false`; the metadata's types want an object). */
const NEVER = { not: {} };

/** The `not` that says "not all of these empty": each member maps to the schema of its empty form. */
export const notAllEmpty = (empty: Record<string, { maxItems: 0 } | { type: 'null' }>) => ({
  not: { properties: empty },
});

/** At least one of the array members, not empty. */
export const someNonEmpty = (...members: string[]) =>
  notAllEmpty(Object.fromEntries(members.map((member) => [member, { maxItems: 0 }])));

/**
 * An integer query parameter written as plain decimal digits. `z.coerce.number()` would
 * take whatever `Number()` takes (`1e2`, `0x10`, `+5`, ` 5`); a client sending those has
 * a bug worth a 400. The document shows an integer with its bounds.
 */
export function decimalQuery(min: number, max: number) {
  return z
    .string()
    .regex(/^[0-9]{1,16}$/, 'must be plain decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max });
}
