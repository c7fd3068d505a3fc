import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.pat('admin');
});
afterAll(() => t?.close());

interface Streamed {
  status: number;
  contentType: string | undefined;
  /** The response's `Connection` header: `close` when the server will not read on. */
  connection: string | undefined;
  body: any;
  bytesWritten: number;
  total: number;
}

/**
 * Streams `total` bytes of body (chunked unless a length is given) the way a careless
 * client does: it keeps writing whatever the server answers, until the server closes the
 * connection or the body is all sent. It resolves once it has the answer and either.
 */
function streamBody(
  method: string,
  path: string,
  headers: Record<string, string>,
  total: number,
  firstBytes = '{"displayName":"',
): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    const url = new URL(t.baseUrl + path);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let bytesWritten = 0;
    let closed = false;
    let reply: Omit<Streamed, 'bytesWritten' | 'total'> | undefined;
    const settle = () => {
      if (reply && (closed || bytesWritten >= total)) resolve({ ...reply, bytesWritten, total });
    };
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (piece: string) => (text += piece));
        res.on('end', () => {
          const contentType = res.headers['content-type'];
          reply = {
            status: res.statusCode!,
            contentType,
            connection: res.headers.connection,
            body: /json/.test(contentType ?? '') ? JSON.parse(text) : text,
          };
          settle();
        });
      },
    );
    req.on('error', () => {}); // the server closing mid-body is what some of these tests expect
    req.on('socket', (socket) =>
      socket.on('close', () => {
        closed = true;
        if (!reply) reject(new Error(`connection closed after ${bytesWritten} bytes without a response`));
        settle();
      }),
    );
    const write = () => {
      while (!closed && bytesWritten < total) {
        const piece = bytesWritten === 0 ? Buffer.from(firstBytes) : chunk.subarray(0, total - bytesWritten);
        bytesWritten += piece.length;
        if (!req.write(piece)) {
          req.once('drain', write);
          return;
        }
      }
      if (!closed) req.end();
      settle();
    };
    write();
  });
}

interface RawUpload {
  /** All the client read, head and body of the answer. */
  received: string;
  /** The server ended its side (FIN) before the connection closed. */
  ended: boolean;
  /** The connection was reset, or a write failed. */
  error?: NodeJS.ErrnoException;
}

/**
 * Sends a chunked upload over a bare socket, 1 MiB chunks for as long as the server takes
 * them, like a client that does not look at the answer before its body is sent. `untilEnd`:
 * it stops when the server ends its side, then ends its own; otherwise it never stops.
 * Resolves when the connection has closed.
 */
async function rawUpload(untilEnd: boolean): Promise<RawUpload> {
  const url = new URL(t.baseUrl);
  const socket = connect({ host: url.hostname, port: Number(url.port), allowHalfOpen: true });
  const seen: RawUpload = { received: '', ended: false };
  socket.setEncoding('latin1');
  socket.on('data', (piece: string) => (seen.received += piece));
  socket.on('end', () => (seen.ended = true));
  socket.on('error', (error) => (seen.error ??= error));
  // Not events.once: it rejects on the socket's error, which is an outcome here.
  const closed = new Promise((resolve) => socket.once('close', resolve));
  await once(socket, 'connect');
  socket.write(
    `PUT /api/tenant HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${admin}\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n',
  );
  const data = Buffer.alloc(1024 * 1024, 'x');
  const chunk = Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
  while (!socket.destroyed && !(untilEnd && seen.ended)) {
    if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
  }
  if (!socket.destroyed) socket.end();
  await closed;
  return seen;
}

function expectProblemBody(reply: { status: number; contentType?: string; body: any }, status: number, slug: string) {
  expect(reply.status).toBe(status);
  expect(reply.contentType).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ type: `http://fleet.test/errors/${slug}`, status });
}

describe('point 8: bodies over the limit and bodies nobody needs', () => {
  test('a chunked body far over the limit is 413 problem JSON, and audited', async () => {
    const total = 24 * 1024 * 1024; // over 8 × the 2 MiB limit
    const reply = await streamBody(
      'PUT',
      '/api/tenant',
      {
        authorization: `Bearer ${admin}`,
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
        'x-request-id': 'chunked-413',
      },
      total,
    );
    expectProblemBody(reply, 413, 'payload-too-large');
    const row = await eventually(async () => {
      const found = await t.database.db('audit_calls').where({ request_id: 'chunked-413' }).first();
      expect(found).toBeDefined();
      return found;
    });
    expect(row).toMatchObject({ method: 'PUT', path: '/api/tenant', status: 413 });
  });

  test('a client still sending when the 413 comes reads all of it, and the connection ends rather than resets', async () => {
    const seen = await rawUpload(true);
    expect(seen.error).toBeUndefined();
    expect(seen.ended).toBe(true);
    const [head, body] = seen.received.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 413 /);
    expect(head).toMatch(/^connection: close$/im);
    expect(JSON.parse(body!)).toMatchObject({ type: 'http://fleet.test/errors/payload-too-large', status: 413 });
  });

  test('a client that never stops sending gets the 413, then is cut off', async () => {
    const seen = await rawUpload(false);
    expect(seen.received).toMatch(/^HTTP\/1\.1 413 /);
    expect(seen.ended).toBe(true);
  });

  test.each([
    ['a bad token (401)', 'PUT', '/api/tenant', 'Bearer nope', 'application/json', 401, 'unauthorized'],
    ['no route (404)', 'POST', '/api/no-such-thing', 'admin', 'application/json', 404, 'not-found'],
    ['a body that is not JSON (415)', 'PUT', '/api/tenant', 'admin', 'text/plain', 415, 'unsupported-media-type'],
  ] as const)(
    'a large body refused for %s is not read: the answer comes and the connection closes',
    async (_, method, path, authorization, contentType, status, slug) => {
      const total = 256 * 1024 * 1024;
      const headers = {
        authorization: authorization === 'admin' ? `Bearer ${admin}` : authorization,
        'content-type': contentType,
        'content-length': String(total),
      };
      const reply = await streamBody(method, path, headers, total);
      expectProblemBody(reply, status, slug);
      expect(reply.connection).toBe('close');
      expect(reply.bytesWritten).toBeLessThan(total);
    },
  );
});

describe('point 10: If-Match compares strongly', () => {
  const put = (ifMatch: string) =>
    t.call('PUT', '/api/tenant', { token: admin, body: { displayName: 'strong' }, headers: { 'if-match': ifMatch } });

  test('a tag that names the same number in other spelling does not match', async () => {
    const etag = (await t.call('GET', '/api/tenant', { token: admin })).headers.get('etag')!;
    const version = Number.parseInt(etag.slice(1, -1), 16);
    for (const other of [`"${version.toString(16)}"`, `"0${etag.slice(1)}`, `"${etag.slice(1, -1).toUpperCase()}X"`]) {
      expect((await put(other)).status).toBe(412);
    }
    expect((await put(`W/${etag}`)).status).toBe(412);
    expect((await put(`"nope", ${etag}`)).status).toBe(200);
  });

  test('* stands alone; a list holding it, or a value that is no entity-tag, is 400', async () => {
    const etag = (await t.call('GET', '/api/tenant', { token: admin })).headers.get('etag')!;
    for (const bad of [`*, ${etag}`, `${etag}, *`, '00000001', `${etag}, unquoted`]) {
      const res = await put(bad);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'header.if-match' })]);
    }
    expect((await put('*')).status).toBe(200);
  });
});

describe('point 11: methods, content codings, numbers', () => {
  test.each([
    ['PUT', '/api/policies/evaluate', 'POST'],
    ['GET', '/api/policies/evaluate', 'POST'],
    ['DELETE', '/api/tenant', 'GET, PUT'],
    ['PATCH', '/api/groups', 'GET, POST'],
  ])('%s %s is 405 with Allow: %s', async (method, path, allow) => {
    const res = await t.call(method, path, { token: admin, ...(method === 'GET' ? {} : { body: {} }) });
    expect(res.status).toBe(405);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body.type).toBe('http://fleet.test/errors/method-not-allowed');
    expect(res.headers.get('allow')).toBe(allow);
  });

  test('a route with a parameter still answers its own methods', async () => {
    const res = await t.call('GET', '/api/policies/00000000-0000-4000-8000-000000000000', { token: admin });
    expect(res.status).toBe(404);
  });

  test.each(['gzip', 'br', 'deflate', 'x-custom'])('Content-Encoding %s is 415', async (encoding) => {
    const res = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: { displayName: 'coded' },
      headers: { 'content-encoding': encoding },
    });
    expect(res.status).toBe(415);
    expect(res.body.type).toBe('http://fleet.test/errors/unsupported-media-type');
    expect(res.body.detail).toContain(encoding);
    expect(res.headers.get('accept-encoding')).toBe('identity');
    const identity = await t.call('PUT', '/api/tenant', {
      token: admin,
      body: { displayName: 'plain' },
      headers: { 'content-encoding': 'identity' },
    });
    expect(identity.status).toBe(200);
  });

  test.each(['1e2', '0x10', '%205', '+5', '5.0', '-1', '', '99999999999999999999'])(
    'limit=%s is 400: numbers are plain decimal digits',
    async (value) => {
      const res = await t.call('GET', `/api/groups?limit=${value}`, { token: admin });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'query.limit' })]);
    },
  );

  test('plain decimal numbers still work, leading zeros included', async () => {
    for (const value of ['5', '005', '1000']) {
      expect((await t.call('GET', `/api/groups?limit=${value}`, { token: admin })).status).toBe(200);
    }
    expect((await t.call('GET', '/api/audit/events?status=200', { token: admin })).status).toBe(200);
    expect((await t.call('GET', '/api/audit/events?status=2e2', { token: admin })).status).toBe(400);
  });
});

describe('point 9: label keys and the text rule', () => {
  test('the label key __proto__ is refused (400 naming it), in bodies and in the label filter', async () => {
    const res = await t.call('POST', '/api/groups', {
      token: admin,
      raw: '{"name": "proto-1", "labels": {"__proto__": "x", "env": "prod"}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: 'body.labels.__proto__' })]);
    const filter = await t.call('GET', '/api/groups?label=__proto__:x', { token: admin });
    expect(filter.status).toBe(400);
    expect(filter.body.errors[0].path).toMatch(/^query\.label/);
    // A key that merely starts like it is an ordinary key.
    const fine = await t.call('POST', '/api/groups', {
      token: admin,
      body: { name: 'proto-2', labels: { __proto__x: 'y' } },
    });
    expect(fine.status).toBe(201);
    expect(fine.body.labels).toEqual({ __proto__x: 'y' });
  });

  // A query string is percent-encoded UTF-8, which cannot carry a lone surrogate: those only come in JSON.
  test.each([
    ['a C0 control', 'a\u0001b', true],
    ['a tab', 'a\tb', true],
    ['DEL', 'a\u007fb', true],
    ['a C1 control', 'a\u0085b', true],
    ['a lone high surrogate', 'a\ud800b', false],
    ['a lone low surrogate', 'a\udc00b', false],
  ])('%s is 400 in a name, a label value and a label filter alike', async (_, text, inQuery) => {
    const cases = [
      { method: 'POST', path: '/api/groups', body: { name: text }, field: 'body.name' },
      { method: 'POST', path: '/api/groups', body: { name: 'g-ok', labels: { env: text } }, field: 'body.labels.env' },
      { method: 'PUT', path: '/api/tenant', body: { displayName: text }, field: 'body.displayName' },
    ];
    for (const { method, path, body, field } of cases) {
      const res = await t.call(method, path, { token: admin, body });
      expect(res.status).toBe(400);
      // A lone surrogate is refused in any string of a body before the route's own rules (api/http/encoding.ts).
      const message = inQuery
        ? 'must not contain control characters or lone surrogates'
        : expect.stringContaining('lone UTF-16 surrogate');
      expect(res.body.errors).toEqual([{ path: field, message }]);
    }
    if (inQuery) {
      const filter = await t.call('GET', `/api/groups?label=env:${encodeURIComponent(text)}`, { token: admin });
      expect(filter.status).toBe(400);
    }
  });

  test('ordinary text beyond ASCII is kept as sent', async () => {
    const name = 'Zürich 東京 😀';
    const res = await t.call('POST', '/api/groups', { token: admin, body: { name, labels: { city: name } } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name, labels: { city: name } });
  });
});
