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

describe('the document states the rules the server enforces', () => {
  let doc: any;
  beforeAll(async () => {
    doc = (await t.call('GET', '/api/openapi.json', { token: await t.token('default.admin') })).body;
  });
  const resolve = (schema: any) => (schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema);
  const bodyOf = (path: string, method: string) =>
    resolve(doc.paths[path][method].requestBody.content['application/json'].schema);
  const parameter = (path: string, method: string, name: string) =>
    doc.paths[path][method].parameters.find((p: { name: string }) => p.name === name);

  test('a named schema is never null itself: where a field may be null, the field says so', () => {
    const nullable = Object.entries(doc.components.schemas)
      .filter(([, schema]: [string, any]) => [schema.type].flat().includes('null'))
      .map(([name]) => name);
    expect(nullable).toEqual([]);
    const peer = doc.components.schemas.FederationPeer.properties.remote;
    expect(peer.anyOf).toEqual([{ $ref: '#/components/schemas/FederationPing' }, { type: 'null' }]);
  });

  test('label keys: their pattern (which refuses __proto__) and at most 64', () => {
    const labels = bodyOf('/api/groups', 'post').properties.labels;
    const keys = new RegExp(labels.propertyNames.pattern);
    expect(keys.test('env')).toBe(true);
    expect(keys.test('__proto__')).toBe(false);
    expect(keys.test('bad key!')).toBe(false);
    expect(labels.maxProperties).toBe(64);
    expect(new RegExp(labels.additionalProperties.pattern).test('a\u0001b')).toBe(false);
  });

  test('names carry the text rule', () => {
    const name = bodyOf('/api/groups', 'post').properties.name;
    expect(new RegExp(name.pattern).test('a\u0085b')).toBe(false);
    expect(new RegExp(name.pattern).test('Zürich')).toBe(true);
  });

  test('offset and cursor exclude each other', () => {
    expect(parameter('/api/groups', 'get', 'offset').description).toMatch(/not both/);
    expect(parameter('/api/groups', 'get', 'cursor').description).toMatch(/not both/);
  });

  test('numbers in the query are bounded integers', () => {
    expect(parameter('/api/groups', 'get', 'limit').schema).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 1000,
    });
    expect(parameter('/api/audit/events', 'get', 'status').schema).toMatchObject({
      type: 'integer',
      minimum: 100,
      maximum: 599,
    });
  });

  test('allowedEndpoints items have their format: a method and a path of this document', async () => {
    const items = bodyOf('/api/pats', 'post').properties.allowedEndpoints.items;
    expect(items.format).toBe('api-endpoint');
    const res = await t.call('POST', '/api/pats', {
      token: await t.token('default.admin'),
      body: { name: 'fmt', role: 'viewer', allowedEndpoints: ['post /api/rollouts'] },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('body.allowedEndpoints.0');
  });

  test('rules between query parameters are x-query-schema, and each refuses what it says', async () => {
    expect(doc.paths['/api/groups'].get['x-query-schema']).toEqual({ not: { required: ['offset', 'cursor'] } });
    expect(doc.paths['/api/agents'].get['x-query-schema']).toEqual({
      allOf: [{ not: { required: ['offset', 'cursor'] } }, { dependentRequired: { version: ['configurationId'] } }],
    });
    expect(parameter('/api/agents', 'get', 'cursor').schema['x-issued-by']).toBe('nextCursor');
    const token = await t.token('default.viewer');
    const both = await t.call('GET', '/api/groups?offset=0&cursor=abc', { token });
    expect(both.body.errors).toEqual([{ path: 'query', message: 'use either offset or cursor, not both' }]);
    const version = await t.call('GET', '/api/agents?version=1', { token });
    expect(version.body.errors).toEqual([{ path: 'query.version', message: 'requires configurationId' }]);
  });

  test('rules between body members are stated with not, which client generators leave out of types', () => {
    const strategy = doc.components.schemas.RolloutStrategy;
    expect(strategy.allOf).toEqual([
      { not: { required: ['batchSize', 'batchPercent'] } },
      { not: { properties: { batchSize: { not: {} }, batchPercent: { not: {} } } } },
    ]);
    expect(doc.components.schemas.RolloutTarget.not).toEqual({
      properties: { groupIds: { maxItems: 0 }, agentIds: { maxItems: 0 }, labelSelector: { type: 'null' } },
    });
    expect(bodyOf('/api/federation/rollouts', 'post').properties.installations['x-unique-by']).toBe('peerId');
  });

  test('If-Match is stated (with its pattern and 412) on changes of an object, not on creations', () => {
    expect(parameter('/api/groups/{id}', 'put', 'if-match').schema.pattern).toEqual(expect.any(String));
    expect(doc.paths['/api/groups/{id}'].put.responses['412']).toBeDefined();
    expect(doc.paths['/api/groups'].post.parameters ?? []).toEqual([]);
    expect(doc.paths['/api/groups'].post.responses['412']).toBeUndefined();
  });

  test('a repeated incoming handover request answers 200, as documented beside its 201', () => {
    const responses = doc.paths['/api/federation/incoming/handovers/{id}'].put.responses;
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(['200', '201']));
    expect(responses['200'].content).toEqual(responses['201'].content);
  });

  test('no string query parameter holds NUL: stated on each, and refused', async () => {
    expect(parameter('/api/groups', 'get', 'q').schema.not).toEqual({ pattern: '\\u0000' });
    const res = await t.call('GET', '/api/groups?q=a%00b', { token: await t.token('default.viewer') });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'query.q', message: 'must not contain NUL (\\u0000)' }]);
  });

  test('version numbers have their maximum', () => {
    const path = '/api/configurations/{id}/versions/{version}';
    expect(parameter(path, 'get', 'version').schema).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 2147483647,
    });
    expect(parameter('/api/agents', 'get', 'version').schema).toMatchObject({ maximum: 2147483647 });
    expect(bodyOf('/api/rollouts', 'post').properties.version).toMatchObject({ minimum: 1, maximum: 2147483647 });
    expect(bodyOf('/api/policies/evaluate', 'post').properties.version).toMatchObject({ maximum: 2147483647 });
  });

  test('a body is required exactly where the server requires one', async () => {
    expect(doc.paths['/api/groups'].post.requestBody.required).toBe(true);
    expect(doc.paths['/api/tokens/pools/{id}/issue'].post.requestBody.required).toBe(false);
    const res = await t.call('PUT', '/api/tenant', { token: await t.token('default.admin') });
    expect(res.status).toBe(400);
    expect(doc.paths['/api/tenant'].put.requestBody.required).toBe(true);
  });
});
