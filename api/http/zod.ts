import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// `.openapi()` on schemas, once for the whole process. Import `z` from here.
extendZodWithOpenApi(z);

export { z };
