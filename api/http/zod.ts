import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// `.openapi()` on schemas, once for the whole process. Import `z` from here.
extendZodWithOpenApi(z);

export { z };

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
