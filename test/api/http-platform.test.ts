import { request } from 'node:http';
import { connect } from 'node:net';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('default.admin');
});
afterAll(() => t?.close());

function expectProblem(res: { status: number; headers: Headers; body: any }, status: number, slug: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: `http://fleet.test/errors/${slug}`, status });
  expect(typeof res.body.title).toBe('string');
  expect(typeof res.body.detail).toBe('string');
  expect(typeof res.body.instance).toBe('string');
  expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
  expect(JSON.stringify(res.body)).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
}

describe('every error is an RFC 9457 problem', () => {
  test('unknown route: 404', async () => {
    const res = await t.call('GET', '/api/nothing-here', { token: admin });
    expectProblem(res, 404, 'not-found');
    expect(res.body.instance).toBe('/api/nothing-here');
    // GET / is the console's (test/console/serving.test.ts); a write there is no route.
    expectProblem(await t.call('POST', '/'), 404, 'not-found');
  });

  test('wrong method: 405 with Allow', async () => {
    const res = await t.call('DELETE', '/api/tenant', { token: admin });
    expectProblem(res, 405, 'method-not-allowed');
    expect(res.headers.get('allow')).toBe('GET, PUT');
  });

  test('malformed JSON: 400, nothing changed', async () => {
    const before = await t.call('GET', '/api/tenant', { token: admin });
    const res = await t.call('PUT', '/api/tenant', {
      token: admin,
      raw: '{"displayName": "x",',
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(res, 400, 'malformed-json');
    expect((await t.call('GET', '/api/tenant', { token: admin })).body).toEqual(before.body);
  });

  test('body over the limit: 413', async () => {
    const big = JSON.stringify({ displayName: 'x'.repeat(3 * 1024 * 1024) });
    expectProblem(
      await t.call('PUT', '/api/tenant', { token: admin, raw: big, headers: { 'content-type': 'application/json' } }),
      413,
      'payload-too-large',
    );
  });

  test('a huge declared body is refused before it is read', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${t.baseUrl}/api/tenant`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'PUT',
          headers: {
            authorization: `Bearer ${admin}`,
            'content-type': 'application/json',
            'content-length': String(1 << 30),
          },
        },
        (res) => {
          resolve(res.statusCode!);
          req.destroy();
        },
      );
      req.on('error', reject);
      req.write('{"displayName":');
    });
    expect(status).toBe(413);
  });

  test('wrong content type: 415', async () => {
    const res = await t.call('PUT', '/api/tenant', {
      token: admin,
      raw: 'displayName=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectProblem(res, 415, 'unsupported-media-type');
  });

  test('validation: 400 with each field error', async () => {
    const res = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: { displayName: '', labels: { 'bad key!': 'x' }, extra: 1 },
    });
    expectProblem(res, 400, 'validation-failed');
    const paths = res.body.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['body.displayName', 'body.labels.bad key!', 'body']));
    const query = await t.call('GET', '/api/audit/events?limit=1001&colour=red', { token: admin });
    expectProblem(query, 400, 'validation-failed');
    expect(query.body.errors.map((e: { path: string }) => e.path)).toEqual(
      expect.arrayContaining(['query.limit', 'query']),
    );
    expectProblem(await t.call('PUT', '/api/tenant', { token: admin }), 400, 'validation-failed');
    expectProblem(await t.call('GET', '/api/pats/not-a-uuid', { token: admin }), 400, 'validation-failed');
  });

  test('authentication: 401', async () => {
    expectProblem(await t.call('GET', '/api/tenant'), 401, 'unauthorized');
  });

  test('each problem type is described at its URL', async () => {
    const res = await t.call('GET', '/errors/precondition-failed');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: 'precondition-failed', status: 412, title: 'Precondition failed' });
    const all = await t.call('GET', '/errors');
    expect(all.body.items.map((e: { slug: string }) => e.slug)).toEqual(
      expect.arrayContaining([
        'validation-failed',
        'unauthorized',
        'policy-denied',
        'invalid-state-transition',
        'internal',
      ]),
    );
    expectProblem(await t.call('GET', '/errors/no-such-error'), 404, 'not-found');
  });
});

describe('requests Node itself cannot read', () => {
  /** Writes `text` on a bare socket and reads the whole answer. */
  function rawExchange(text: string): Promise<{ status: number; contentType: string; body: any }> {
    const { port } = new URL(t.baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.end(text));
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      socket.on('error', reject);
      socket.on('close', () => {
        const [head = '', body = ''] = answer.split('\r\n\r\n');
        resolve({
          status: Number(head.split(' ')[1]),
          contentType: /content-type: ([^\r\n]+)/i.exec(head)?.[1] ?? '',
          body: body ? JSON.parse(body) : undefined,
        });
      });
    });
  }

  test('a URL over 16 KiB is 431 as a problem document, not a bare status line', async () => {
    const res = await rawExchange(`GET /api/groups?q=${'x'.repeat(17 * 1024)} HTTP/1.1\r\nHost: fleet.test\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.contentType).toBe('application/problem+json');
    expect(res.body).toMatchObject({
      type: 'http://fleet.test/errors/headers-too-large',
      status: 431,
      instance: '/api/groups',
    });
  });

  test('a request that is not HTTP is 400 as a problem document', async () => {
    const res = await rawExchange('HELLO THERE\r\n\r\n');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'http://fleet.test/errors/bad-request', status: 400 });
  });
});

describe('hostile input gets a 4xx, never a 500', () => {
  test('crafted cursors are 400', async () => {
    const cursor = (values: unknown) => Buffer.from(JSON.stringify(values)).toString('base64url');
    for (const [path, values] of [
      ['/api/audit/events', ['abc']],
      ['/api/audit/events', [1e21]],
      ['/api/pats', [0, 'x']],
      ['/api/pats', ['x', '00000000-0000-4000-8000-000000000000']],
      ['/api/pats', [1, 2, 3]],
    ] as const) {
      const res = await t.call('GET', `${path}?cursor=${cursor(values)}`, { token: admin });
      expectProblem(res, 400, 'validation-failed');
      expect(res.body.errors[0].path).toBe('query.cursor');
    }
  });

  test('an If-Match beyond any row version is 412', async () => {
    for (const tag of ['"ffffffffffffffff"', '"8000000000000000"', '"zz"']) {
      const res = await t.call('PUT', '/api/tenant', {
        token: admin,
        body: { displayName: 'x' },
        headers: { 'if-match': tag },
      });
      expectProblem(res, 412, 'precondition-failed');
    }
  });

  test('paths are case-sensitive, so an upper-case path is no route', async () => {
    expectProblem(await t.call('GET', '/API/TENANT', { token: admin }), 404, 'not-found');
  });

  test('NUL and bad percent-encoding in a path are 4xx', async () => {
    expectProblem(await t.call('GET', '/api/pats/%00', { token: admin }), 400, 'validation-failed');
    expect((await t.call('GET', '/api/pats/%E0%A4%A', { token: admin })).status).toBeLessThan(500);
    expectProblem(await t.call('GET', '/api/pats/%00'), 401, 'unauthorized');
  });

  test('a body is not read before the caller is authenticated', async () => {
    const res = await t.call('PUT', '/api/tenant', { raw: '{not json', headers: { 'content-type': 'text/plain' } });
    expectProblem(res, 401, 'unauthorized');
  });

  test.each([['null'], ['[]'], ['5'], ['"s"'], ['true'], ['{"__proto__": {"displayName": "x"}}']])(
    'body %s is 400',
    async (raw) => {
      const res = await t.call('PUT', '/api/tenant', {
        token: admin,
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expectProblem(res, 400, 'validation-failed');
    },
  );
});

describe('request ids', () => {
  test('a sane incoming X-Request-Id is kept; otherwise one is made', async () => {
    const kept = await t.call('GET', '/healthz', { headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-123');
    const made = await t.call('GET', '/healthz', { headers: { 'x-request-id': 'bad id\twith junk' } });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('operations endpoints', () => {
  test('/healthz and /readyz', async () => {
    expect((await t.call('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await t.call('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks.postgres).toBe('ok');
  });

  test('/metrics counts requests by route template, and times them in a histogram', async () => {
    const scrape = async () => {
      const res = await t.call('GET', '/metrics');
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text: string = res.body;
      const value = (line: string) =>
        Number(
          text
            .split('\n')
            .find((l) => l.startsWith(`${line} `))
            ?.split(' ')[1] ?? 0,
        );
      return { text, value };
    };
    const tenant = 'method="GET",route="/api/tenant"';
    const before = await scrape();
    await t.call('GET', '/api/tenant', { token: admin });
    await t.call('GET', '/api/tenant', { token: admin });
    await t.call('GET', '/api/tenant', { token: 'svc-pat.not-a-token' });
    const after = await scrape();
    const grew = (line: string) => after.value(line) - before.value(line);

    expect(after.text).toMatch(/# TYPE http_requests_total counter/);
    expect(grew(`http_requests_total{${tenant},status="200"}`)).toBe(2);
    expect(grew(`http_requests_total{${tenant},status="401"}`)).toBe(1);
    expect(after.text).toMatch(/# TYPE http_request_duration_seconds histogram/);
    expect(grew(`http_request_duration_seconds_count{${tenant}}`)).toBe(3);
    expect(grew(`http_request_duration_seconds_bucket{${tenant},le="+Inf"}`)).toBe(3);
    expect(after.value(`http_request_duration_seconds_sum{${tenant}}`)).toBeGreaterThan(0);
    // Buckets are cumulative: each holds at least as many as the one below it.
    const buckets = after.text
      .split('\n')
      .filter((line) => line.startsWith(`http_request_duration_seconds_bucket{${tenant},`))
      .map((line) => Number(line.split(' ')[1]));
    expect(buckets).toHaveLength(13);
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
    expect(after.text).toMatch(/process_resident_memory_bytes/);
  });

  test('/swagger is absent in Production', async () => {
    expect((await t.call('GET', '/swagger')).status).toBe(404);
  });
});

describe('in Development', () => {
  let dev: TestApp;
  beforeAll(async () => {
    dev = await startTestApp({ Environment: 'Development' });
  });
  afterAll(() => dev?.close());

  test('/swagger serves the interface explorer', async () => {
    const page = await dev.call('GET', '/swagger');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.body).toContain('/api/openapi.json');
    const bundle = await dev.call('GET', '/swagger/swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    for (const asset of ['..%2Fpackage.json', 'constructor', '__proto__', 'toString']) {
      expect((await dev.call('GET', `/swagger/${asset}`)).status).toBe(404);
    }
  });
});
