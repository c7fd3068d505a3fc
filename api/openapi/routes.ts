import { readFileSync } from 'node:fs';
import { problems } from '../problems';
import { route, type RouteDef } from '../http/route';
import { z } from '../http/zod';
import { buildOpenApiDocument } from './document';

/** `GET /api/openapi.json` (any role that reads; not a peer's PAT), built once on first request. */
export function openApiRoutes(routes: () => RouteDef[], serverUrl: string): RouteDef[] {
  let document: unknown;
  return [
    route({
      method: 'get',
      path: '/api/openapi.json',
      summary: 'This document',
      tag: 'system',
      permission: 'read',
      response: { status: 200, description: 'OpenAPI 3.1.', schema: z.object({ openapi: z.string() }).passthrough() },
      handler: async () => {
        document ??= buildOpenApiDocument(routes(), serverUrl);
        return { body: document };
      },
    }),
  ];
}

const SWAGGER_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Fleet Configuration Service API</title>
<link rel="stylesheet" href="/swagger/swagger-ui.css"></head>
<body>
<form id="token" style="font-family:sans-serif;padding:12px;background:#f4f4f4">
  <label>Bearer token (an admin PAT from <code>npm run fleet -- create-pat</code>, or an OIDC token):
  <input name="value" type="password" size="60"></label> <button>Load</button>
</form>
<div id="ui"></div>
<script src="/swagger/swagger-ui-bundle.js"></script>
<script>
  const form = document.getElementById('token');
  function load(token) {
    SwaggerUIBundle({
      url: '/api/openapi.json', dom_id: '#ui',
      requestInterceptor: (req) => { req.headers.Authorization = 'Bearer ' + token; return req; },
    });
  }
  form.addEventListener('submit', (e) => { e.preventDefault(); sessionStorage.token = form.value.value; load(form.value.value); });
  if (sessionStorage.token) load(sessionStorage.token);
</script></body></html>`;

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css',
  'swagger-ui-bundle.js': 'application/javascript',
};

/** The interface explorer, mounted in Development only. */
export function swaggerRoutes(): RouteDef[] {
  const dist = require.resolve('swagger-ui-dist/package.json').replace(/package\.json$/, '');
  return [
    route({
      method: 'get',
      path: '/swagger',
      summary: 'Interface explorer (Development only)',
      tag: 'system',
      permission: 'public',
      response: { status: 200, description: 'HTML page.', schema: z.string(), contentType: 'text/html' },
      handler: async () => ({ body: SWAGGER_PAGE }),
    }),
    route({
      method: 'get',
      path: '/swagger/{asset}',
      summary: 'Interface explorer assets (Development only)',
      tag: 'system',
      permission: 'public',
      params: z.object({ asset: z.string() }),
      response: { status: 200, description: 'Asset.', schema: z.string() },
      handler: async ({ params, ctx }) => {
        if (!Object.hasOwn(ASSETS, params.asset)) throw problems.notFound('asset', params.asset);
        const type = ASSETS[params.asset]!;
        ctx.type = type;
        return { body: readFileSync(dist + params.asset) };
      },
    }),
  ];
}
