import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { WITHOUT_NUL } from '../http/encoding';
import { registerOpenApi, type RouteDef } from '../http/route';
import { z } from '../http/zod';

const problemSchema = z
  .object({
    type: z.string().openapi({ description: '`{Errors:BaseUrl}/<slug>`; GET it for a description.' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().openapi({ description: 'Path of the request.' }),
    requestId: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .catchall(z.unknown())
  .openapi('Problem');

/** The OpenAPI 3.1 document of every route the app serves, from their own zod schemas. */
export function buildOpenApiDocument(routes: RouteDef[], serverUrl: string) {
  const registry = new OpenAPIRegistry();
  registry.register('Problem', problemSchema);
  registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An OIDC access or ID token of an operator, or a PAT (`svc-pat.<secret>.<crc>`).',
  });
  for (const def of routes) registerOpenApi(registry, def);
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Fleet Configuration Service',
      version: '1',
      description: 'Manage configurations of fleets of agents. Errors are RFC 9457 problems.',
    },
    servers: [{ url: serverUrl }],
  });
  stateQueryTextRule(document.paths as Record<string, Record<string, unknown>> | undefined);
  return document;
}

/** No query parameter holds NUL (http/encoding.ts): stated on every string one. */
function stateQueryTextRule(paths: Record<string, Record<string, unknown>> = {}): void {
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations) as Array<{ parameters?: unknown[] }>) {
      for (const parameter of (operation.parameters ?? []) as Array<{ in?: string; schema?: { type?: unknown } }>) {
        if (parameter.in === 'query' && parameter.schema?.type === 'string')
          Object.assign(parameter.schema, WITHOUT_NUL);
      }
    }
  }
}
