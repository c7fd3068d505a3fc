import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

test('the document requires authentication', async () => {
  expect((await t.call('GET', '/api/openapi.json')).status).toBe(401);
});

test('it is OpenAPI 3.1 and covers every route the app serves, with problem responses', async () => {
  const res = await t.call('GET', '/api/openapi.json', { token: await t.token('default.viewer') });
  expect(res.status).toBe(200);
  const doc = res.body;
  expect(doc.openapi).toBe('3.1.0');
  for (const route of t.app.routes) {
    const operation = doc.paths[route.path]?.[route.method];
    expect({ route: `${route.method} ${route.path}`, documented: Boolean(operation) }).toEqual({
      route: `${route.method} ${route.path}`,
      documented: true,
    });
    expect(operation.responses.default.content['application/problem+json']).toBeDefined();
  }
  const put = doc.paths['/api/tenant'].put;
  expect(put.responses['412']).toBeDefined();
  expect(put.requestBody.content['application/json'].schema).toBeDefined();
  expect(doc.components.schemas.Problem).toBeDefined();
  expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  const params = doc.paths['/api/audit/events'].get.parameters.map((p: { name: string }) => p.name);
  expect(params).toEqual(expect.arrayContaining(['limit', 'offset', 'cursor', 'actor', 'from']));
});

test('the schemas in the document are the ones that validate: a documented enum is enforced', async () => {
  const doc = (await t.call('GET', '/api/openapi.json', { token: await t.token('default.admin') })).body;
  const schema = doc.paths['/api/pats'].post.requestBody.content['application/json'].schema;
  const body = schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
  expect(body.properties.role.enum).toEqual(['viewer', 'operator', 'auditor', 'admin', 'peer']);
  const res = await t.call('POST', '/api/pats', {
    token: await t.token('default.admin'),
    body: { name: 'x', role: 'superuser' },
  });
  expect(res.status).toBe(400);
});
