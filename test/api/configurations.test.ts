import { createHash } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { expectConfigurationCreatedAsShown } from '../support/events';

let t: TestApp;
let operator: string;
let viewer: string;
beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
  viewer = await t.token('default.viewer');
});
afterAll(() => t?.close());

const ERRORS = 'http://fleet.test/errors';
let names = 0;

async function create(format: 'yaml' | 'json' | 'text' = 'yaml', extra: Record<string, unknown> = {}) {
  const res = await t.call('POST', '/api/configurations', {
    token: operator,
    body: { name: `cfg-${++names}`, format, ...extra },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
}

async function save(id: string, content: string, headers: Record<string, string> = {}) {
  return t.call('POST', `/api/configurations/${id}/versions`, { token: operator, body: { content }, headers });
}

const events = (type: string, subject: string) => t.database.db('events').where({ type, subject }).orderBy('seq');

describe('configuration containers', () => {
  test('create, read with ETag, list with filters', async () => {
    const res = await t.call('POST', '/api/configurations', {
      token: operator,
      body: {
        name: 'edge/otel-collector',
        format: 'yaml',
        description: 'edge collectors',
        labels: { env: 'prod', team: 'obs' },
      },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/api/configurations/${res.body.id}`);
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]+"$/);
    expect(res.body).toMatchObject({
      name: 'edge/otel-collector',
      format: 'yaml',
      latestVersion: 0,
      publishedVersion: null,
      managedBy: null,
    });

    const detail = await t.call('GET', `/api/configurations/${res.body.id}`, { token: viewer });
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual(res.body);
    expect(detail.headers.get('etag')).toBe(res.headers.get('etag'));
    await expectConfigurationCreatedAsShown(t.database.db, res.body.id, detail.body);
    const again = await t.call('GET', `/api/configurations/${res.body.id}`, {
      token: viewer,
      headers: { 'if-none-match': detail.headers.get('etag')! },
    });
    expect(again.status).toBe(304);

    await create('json', { labels: { env: 'dev' } });
    const byName = await t.call('GET', '/api/configurations?q=OTEL-coll', { token: viewer });
    expect(byName.body.items.map((c: { id: string }) => c.id)).toEqual([res.body.id]);
    const byLabel = await t.call('GET', '/api/configurations?label=env:prod&label=team:obs', { token: viewer });
    expect(byLabel.body.items.map((c: { id: string }) => c.id)).toEqual([res.body.id]);
    const byFormat = await t.call('GET', '/api/configurations?format=json&label=env:dev', { token: viewer });
    expect(byFormat.body.items).toHaveLength(1);
    expect(byFormat.headers.get('x-total-count')).toBe('1');
    const wildcard = await t.call('GET', '/api/configurations?q=%25', { token: viewer });
    expect(wildcard.body.items).toHaveLength(0); // `%` is a character, not a pattern
  });

  test('names are unique per tenant (409), not across tenants', async () => {
    const first = await create();
    const again = await t.call('POST', '/api/configurations', {
      token: operator,
      body: { name: first.name, format: 'text' },
    });
    expect(again.status).toBe(409);
    expect(again.body.type).toBe(`${ERRORS}/conflict`);
    const elsewhere = await t.call('POST', '/api/configurations', {
      token: await t.token('acme.operator'),
      body: { name: first.name, format: 'text' },
    });
    expect(elsewhere.status).toBe(201);
  });

  test.each([
    [{ name: 'x', format: 'toml' }, 'body.format'],
    [{ name: '', format: 'yaml' }, 'body.name'],
    [{ name: 'x', format: 'yaml', labels: { 'bad key': 'v' } }, 'body.labels.bad key'],
    [{ name: 'x', format: 'yaml', latestVersion: 3 }, 'body'],
  ])('invalid create %j is 400 naming %s', async (body, path) => {
    const res = await t.call('POST', '/api/configurations', { token: operator, body });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${ERRORS}/validation-failed`);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  test('PUT honours If-Match (412 on a stale ETag), renames if the name is free, emits configuration.updated', async () => {
    const cfg = await create();
    const taken = await create();
    const etag = (await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer })).headers.get('etag')!;
    const put = await t.call('PUT', `/api/configurations/${cfg.id}`, {
      token: operator,
      body: { name: `${cfg.name}-renamed`, description: 'new', labels: { tier: 'edge' } },
      headers: { 'if-match': etag },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: `${cfg.name}-renamed`, description: 'new', labels: { tier: 'edge' } });
    expect(put.headers.get('etag')).not.toBe(etag);

    const stale = await t.call('PUT', `/api/configurations/${cfg.id}`, {
      token: operator,
      body: { name: cfg.name },
      headers: { 'if-match': etag },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toBe(`${ERRORS}/precondition-failed`);

    const clash = await t.call('PUT', `/api/configurations/${cfg.id}`, { token: operator, body: { name: taken.name } });
    expect(clash.status).toBe(409);
    const format = await t.call('PUT', `/api/configurations/${cfg.id}`, {
      token: operator,
      body: { name: cfg.name, format: 'json' },
    });
    expect(format.status).toBe(400);
    expect(await events('configuration.updated', cfg.id)).toHaveLength(1);
  });

  test('two writers with the same ETag: one wins, the other gets 412', async () => {
    const cfg = await create();
    const etag = (await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer })).headers.get('etag')!;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => save(cfg.id, `v: ${i}\n`, { 'if-match': etag })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 412)).toHaveLength(9);
  });
});

describe('roles and tenants', () => {
  test('a viewer reads but every change is 403', async () => {
    const cfg = await create();
    await save(cfg.id, 'a: 1\n');
    expect((await t.call('GET', `/api/configurations/${cfg.id}/versions/1`, { token: viewer })).status).toBe(200);
    const calls: Array<[string, string, unknown]> = [
      ['POST', '/api/configurations', { name: 'viewer-made', format: 'yaml' }],
      ['PUT', `/api/configurations/${cfg.id}`, { name: 'viewer-renamed' }],
      ['POST', `/api/configurations/${cfg.id}/versions`, { content: 'a: 2\n' }],
      ['POST', `/api/configurations/${cfg.id}/versions/1/publish`, undefined],
    ];
    for (const [method, path, body] of calls) {
      const res = await t.call(method, path, { token: viewer, body });
      expect(res.status).toBe(403);
      expect(res.body.type).toBe(`${ERRORS}/forbidden`);
    }
    const pat = await t.pat('viewer');
    expect(
      (await t.call('POST', `/api/configurations/${cfg.id}/versions`, { token: pat, body: { content: 'a: 3\n' } }))
        .status,
    ).toBe(403);
  });

  test("another tenant's configuration is 404 on every route and absent from lists", async () => {
    const cfg = await create();
    await save(cfg.id, 'a: 1\n');
    const acme = await t.token('acme.operator');
    const paths: Array<[string, string, unknown]> = [
      ['GET', `/api/configurations/${cfg.id}`, undefined],
      ['PUT', `/api/configurations/${cfg.id}`, { name: 'stolen' }],
      ['POST', `/api/configurations/${cfg.id}/versions`, { content: 'a: 2\n' }],
      ['GET', `/api/configurations/${cfg.id}/versions`, undefined],
      ['GET', `/api/configurations/${cfg.id}/versions/1`, undefined],
      ['GET', `/api/configurations/${cfg.id}/versions/compare?from=1&to=1`, undefined],
      ['POST', `/api/configurations/${cfg.id}/versions/1/publish`, undefined],
    ];
    for (const [method, path, body] of paths) {
      const res = await t.call(method, path, { token: acme, body });
      expect([path, res.status]).toEqual([path, 404]);
    }
    const list = await t.call('GET', `/api/configurations?q=${cfg.name}`, { token: acme });
    expect(list.body.items).toHaveLength(0);
    expect((await t.call('GET', `/api/configurations/${cfg.id}/versions/1`, { token: viewer })).body.state).toBe(
      'draft',
    );
  });
});

describe('versions', () => {
  test('save a draft, read it, publish it; the container follows', async () => {
    const cfg = await create();
    const content = 'receivers:\n  otlp:\n    protocols: { grpc: {} }\n';
    const saved = await save(cfg.id, content);
    expect(saved.status).toBe(201);
    expect(saved.headers.get('location')).toBe(`/api/configurations/${cfg.id}/versions/1`);
    expect(saved.body).toMatchObject({
      configurationId: cfg.id,
      version: 1,
      state: 'draft',
      contentHash: createHash('sha256').update(content).digest('hex'),
      author: 'default.operator',
      publishedAt: null,
    });
    const container = await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer });
    expect(container.body).toMatchObject({ latestVersion: 1, publishedVersion: null });
    expect(container.headers.get('etag')).toBe(saved.headers.get('etag'));

    const version = await t.call('GET', `/api/configurations/${cfg.id}/versions/1`, { token: viewer });
    expect(version.body).toEqual({ ...saved.body, content });

    const published = await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, {
      token: operator,
      headers: { 'if-match': saved.headers.get('etag')! },
    });
    expect(published.status).toBe(200);
    expect(published.body).toMatchObject({ version: 1, state: 'published', publishedBy: 'default.operator' });
    expect(published.body.publishedAt).toEqual(expect.any(String));
    const after = await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer });
    expect(after.body).toMatchObject({ latestVersion: 1, publishedVersion: 1 });
    expect(after.headers.get('etag')).toBe(published.headers.get('etag'));

    expect(await events('configuration.created', cfg.id)).toHaveLength(1);
    const [savedEvent] = await events('configuration.version-saved', cfg.id);
    expect(savedEvent.data).toMatchObject({ configurationId: cfg.id, version: 1, state: 'draft' });
    expect(savedEvent.data.content).toBeUndefined();
    const [publishedEvent] = await events('configuration.version-published', cfg.id);
    expect(publishedEvent.data).toMatchObject({
      configurationId: cfg.id,
      name: cfg.name,
      version: 1,
      state: 'published',
      contentHash: saved.body.contentHash,
    });
  });

  test('publishing twice is idempotent: the same body, no second event, even with the old ETag', async () => {
    const cfg = await create('text');
    const saved = await save(cfg.id, 'hello');
    const etag = saved.headers.get('etag')!;
    const first = await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, {
      token: operator,
      headers: { 'if-match': etag },
    });
    const second = await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, {
      token: operator,
      headers: { 'if-match': etag },
    });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(await events('configuration.version-published', cfg.id)).toHaveLength(1);
    // The repeat compares no ETag, but a malformed If-Match is still a client's bug: 400.
    const malformed = await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, {
      token: operator,
      headers: { 'if-match': 'not-a-tag' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual([
      { path: 'header.if-match', message: 'must be * alone or a list of quoted entity-tags' },
    ]);
  });

  test('publishing a draft with a stale ETag is 412; publishedVersion is the highest published', async () => {
    const cfg = await create('text');
    const one = await save(cfg.id, 'one');
    await save(cfg.id, 'two');
    const stale = await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, {
      token: operator,
      headers: { 'if-match': one.headers.get('etag')! },
    });
    expect(stale.status).toBe(412);
    expect((await t.call('GET', `/api/configurations/${cfg.id}/versions/1`, { token: viewer })).body.state).toBe(
      'draft',
    );

    await t.call('POST', `/api/configurations/${cfg.id}/versions/2/publish`, { token: operator });
    await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, { token: operator });
    const container = await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer });
    expect(container.body).toMatchObject({ latestVersion: 2, publishedVersion: 2 });
    expect((await t.call('POST', `/api/configurations/${cfg.id}/versions/3/publish`, { token: operator })).status).toBe(
      404,
    );
  });

  test('20 concurrent draft saves get distinct, consecutive version numbers', async () => {
    const cfg = await create('json');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => save(cfg.id, JSON.stringify({ writer: i }))),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const numbers = results.map((r) => r.body.version as number).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect((await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer })).body.latestVersion).toBe(20);
    for (const r of results) {
      const stored = await t.call('GET', `/api/configurations/${cfg.id}/versions/${r.body.version}`, { token: viewer });
      expect(stored.body.contentHash).toBe(r.body.contentHash);
    }
  });

  test.each([
    ['yaml', 'service:\n  pipelines: [a, b\n  other: 1\n', /^line 3, column 3: invalid YAML: Flow sequence/],
    ['json', '{\n  "a": 1,\n  "b": tru\n}', /^line 3, column 8: invalid JSON: unexpected character "t"/],
    ['text', 'nul \u0000 here', /^line 1, column 5: a NUL character/],
  ] as const)('invalid %s content is 400 at body.content with line and column', async (format, content, message) => {
    const cfg = await create(format);
    const res = await save(cfg.id, content);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${ERRORS}/validation-failed`);
    expect(res.body.errors[0].path).toBe('body.content');
    expect(res.body.errors[0].message).toMatch(message);
    expect((await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer })).body.latestVersion).toBe(0);
  });

  test('content is limited to 1 MiB of UTF-8: exactly 1 MiB is saved, one byte more is 413', async () => {
    const cfg = await create('text');
    expect((await save(cfg.id, 'a'.repeat(1_048_576))).status).toBe(201);
    const over = await save(cfg.id, 'a'.repeat(1_048_577));
    expect(over.status).toBe(413);
    expect(over.body.type).toBe(`${ERRORS}/payload-too-large`);
    expect(over.body).toMatchObject({ limit: 1_048_576, size: 1_048_577 });
    const multibyte = await save(cfg.id, 'é'.repeat(524_289)); // 524,289 characters, 1,048,578 bytes
    expect(multibyte.status).toBe(413);
    expect((await t.call('GET', `/api/configurations/${cfg.id}`, { token: viewer })).body.latestVersion).toBe(1);
  });

  test.each(['0', '-1', 'abc', '1.5', '01', '99999999999'])('version %s in the path is 400', async (version) => {
    const cfg = await create();
    const res = await t.call('GET', `/api/configurations/${cfg.id}/versions/${version}`, { token: viewer });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].path).toBe('path.version');
    const publish = await t.call('POST', `/api/configurations/${cfg.id}/versions/${version}/publish`, {
      token: operator,
    });
    expect(publish.status).toBe(400);
  });

  test('a missing body, a non-string content and an unknown version answer 400, 400, 404', async () => {
    const cfg = await create();
    expect((await t.call('POST', `/api/configurations/${cfg.id}/versions`, { token: operator })).status).toBe(400);
    const notString = await save(cfg.id, 42 as unknown as string);
    expect(notString.status).toBe(400);
    expect(notString.body.errors[0].path).toBe('body.content');
    expect((await t.call('GET', `/api/configurations/${cfg.id}/versions/7`, { token: viewer })).status).toBe(404);
    expect((await t.call('GET', `/api/configurations/not-a-uuid`, { token: viewer })).status).toBe(400);
  });

  test('versions are listed newest first, without content, across pages', async () => {
    const cfg = await create('text');
    for (let i = 1; i <= 7; i++) await save(cfg.id, `content ${i}`);
    await t.call('POST', `/api/configurations/${cfg.id}/versions/3/publish`, { token: operator });
    const seen: number[] = [];
    let path = `/api/configurations/${cfg.id}/versions?limit=3`;
    for (;;) {
      const page = await t.call('GET', path, { token: viewer });
      expect(page.status).toBe(200);
      expect(page.headers.get('x-total-count')).toBe('7');
      for (const item of page.body.items) expect(item.content).toBeUndefined();
      seen.push(...page.body.items.map((v: { version: number }) => v.version));
      const link = page.headers.get('link');
      if (!page.body.nextCursor) {
        expect(link).toBeNull();
        break;
      }
      expect(link).toMatch(/rel="next"/);
      path = link!.slice(1, link!.indexOf('>')).replace('http://fleet.test', '');
    }
    expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1]);
    const published = await t.call('GET', `/api/configurations/${cfg.id}/versions?state=published`, { token: viewer });
    expect(published.body.items.map((v: { version: number }) => v.version)).toEqual([3]);
    const offset = await t.call('GET', `/api/configurations/${cfg.id}/versions?limit=2&offset=5`, { token: viewer });
    expect(offset.body.items.map((v: { version: number }) => v.version)).toEqual([2, 1]);
  });
});

describe('compare', () => {
  test('YAML: a unified diff and key-level added, removed and changed paths', async () => {
    const cfg = await create('yaml');
    await save(
      cfg.id,
      'exporters:\n  debug: {}\nservice:\n  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\nlevel: info\n',
    );
    await save(
      cfg.id,
      'exporters:\n  otlphttp:\n    endpoint: https://x\nservice:\n  pipelines:\n    traces:\n      receivers: [otlp, zipkin]\n      exporters: [otlphttp]\nlevel: info\n',
    );
    const res = await t.call('GET', `/api/configurations/${cfg.id}/versions/compare?from=1&to=2`, { token: viewer });
    expect(res.status).toBe(200);
    expect(res.body.from).toBe(1);
    expect(res.body.to).toBe(2);
    expect(res.body.unifiedDiff).toContain(`--- a/${cfg.name}\tversion 1\n+++ b/${cfg.name}\tversion 2\n`);
    expect(res.body.unifiedDiff).toContain('-  debug: {}\n+  otlphttp:\n+    endpoint: https://x\n');
    expect(res.body.changes).toEqual([
      { op: 'removed', path: 'exporters.debug', from: {} },
      { op: 'added', path: 'exporters.otlphttp', to: { endpoint: 'https://x' } },
      { op: 'added', path: 'service.pipelines.traces.receivers[1]', to: 'zipkin' },
      { op: 'changed', path: 'service.pipelines.traces.exporters[0]', from: 'debug', to: 'otlphttp' },
    ]);
    const same = await t.call('GET', `/api/configurations/${cfg.id}/versions/compare?from=2&to=2`, { token: viewer });
    expect(same.body.changes).toEqual([]);
    expect(same.body.unifiedDiff).not.toContain('@@');
  });

  test('text: a unified diff and no key-level changes', async () => {
    const cfg = await create('text');
    await save(cfg.id, 'line one\nline two\n');
    await save(cfg.id, 'line one\nline 2\n');
    const res = await t.call('GET', `/api/configurations/${cfg.id}/versions/compare?from=1&to=2`, { token: viewer });
    expect(res.status).toBe(200);
    expect(res.body.changes).toBeNull();
    expect(res.body.unifiedDiff).toContain('@@ -1,2 +1,2 @@\n line one\n-line two\n+line 2\n');
  });

  test('an unknown version is 404; missing or bad numbers are 400', async () => {
    const cfg = await create('json');
    await save(cfg.id, '{}');
    expect(
      (await t.call('GET', `/api/configurations/${cfg.id}/versions/compare?from=1&to=9`, { token: viewer })).status,
    ).toBe(404);
    const missing = await t.call('GET', `/api/configurations/${cfg.id}/versions/compare?from=1`, { token: viewer });
    expect(missing.status).toBe(400);
    expect(missing.body.errors.map((e: { path: string }) => e.path)).toContain('query.to');
    expect(
      (await t.call('GET', `/api/configurations/${cfg.id}/versions/compare?from=0&to=1`, { token: viewer })).status,
    ).toBe(400);
  });
});

describe('Git-managed configurations', () => {
  test('refuse edits with 409 managed-by-git; publishing stays possible', async () => {
    const cfg = await create('text');
    await save(cfg.id, 'from git');
    await t.database.db('configurations').where({ id: cfg.id }).update({ managed_by: 'git-source-1' });
    const put = await t.call('PUT', `/api/configurations/${cfg.id}`, {
      token: operator,
      body: { name: cfg.name, description: 'edited' },
    });
    expect(put.status).toBe(409);
    expect(put.body.type).toBe(`${ERRORS}/managed-by-git`);
    const draft = await save(cfg.id, 'edited');
    expect(draft.status).toBe(409);
    expect(draft.body.type).toBe(`${ERRORS}/managed-by-git`);
    expect((await t.call('POST', `/api/configurations/${cfg.id}/versions/1/publish`, { token: operator })).status).toBe(
      200,
    );
  });
});
