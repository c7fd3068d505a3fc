/**
 * One rule for the text of a request: invalid UTF-8 in a JSON body or a query string, and a
 * lone surrogate in any string of a body, is a 400 naming the field, never U+FFFD.
 */
import { request } from 'node:http';
import { firstInvalidUtf8, jsonPathAt } from '../../api/http/encoding';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  admin = await t.pat('admin');
});
afterAll(() => t?.close());

/** Sends `body` as the exact bytes given. */
function sendBytes(method: string, path: string, body: Buffer): Promise<{ status: number; body: any }> {
  const url = new URL(path, t.baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers: {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `{"name": …, "<field>": "a<bytes>b"}` with raw bytes in the middle. */
const groupWith = (field: 'name' | 'description', bytes: number[]) =>
  Buffer.concat([
    Buffer.from(`{"name": "g-${Math.random().toString(36).slice(2, 8)}", "labels": {"env": "prod"}, "${field}": "a`),
    Buffer.from(bytes),
    Buffer.from('b"}'),
  ]);

describe('the bytes of a JSON body', () => {
  test.each([
    ['FF FE', [0xff, 0xfe]],
    ['an overlong / (C0 AF)', [0xc0, 0xaf]],
    ['an encoded surrogate (ED A0 80)', [0xed, 0xa0, 0x80]],
    ['a truncated sequence (E2 82)', [0xe2, 0x82]],
    ['above U+10FFFF (F4 90 80 80)', [0xf4, 0x90, 0x80, 0x80]],
  ])('%s in a description is 400 naming it; nothing is stored', async (_what, bytes) => {
    const res = await sendBytes('POST', '/api/groups', groupWith('description', bytes));
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'body.description', message: 'must be valid UTF-8' }]);
    expect(await t.database.db('groups').where('description', 'like', '%\uFFFD%')).toEqual([]);
  });

  test('the field is named however deep it is, and in a member name', async () => {
    const nested = Buffer.concat([
      Buffer.from('{"name": "x", "labels": {"env": "p'),
      Buffer.from([0xff]),
      Buffer.from('"}}'),
    ]);
    expect((await sendBytes('POST', '/api/groups', nested)).body.errors).toEqual([
      { path: 'body.labels.env', message: 'must be valid UTF-8' },
    ]);
    const inName = Buffer.concat([
      Buffer.from('{"name": "x", "labels": {"e'),
      Buffer.from([0xc0, 0xaf]),
      Buffer.from('": "p"}}'),
    ]);
    expect((await sendBytes('POST', '/api/groups', inName)).body.errors).toEqual([
      { path: 'body.labels', message: 'a member name must be valid UTF-8' },
    ]);
  });

  test('valid UTF-8 beyond ASCII, and a U+FFFD sent as such, are kept as sent', async () => {
    const description = 'Zürich 東京 😀 \uFFFD';
    const res = await t.call('POST', '/api/groups', {
      token: admin,
      body: { name: `g-${Math.random().toString(36).slice(2, 8)}`, description },
    });
    expect(res.status).toBe(201);
    expect(res.body.description).toBe(description);
  });
});

describe('lone surrogates in any string of a body', () => {
  const json = { 'content-type': 'application/json' };
  test.each([
    ['a description', '{"name": "lone-1", "description": "a\\ud800b"}', 'body.description'],
    ['a label value', '{"name": "lone-2", "labels": {"env": "\\udc00"}}', 'body.labels.env'],
    ['a name', '{"name": "a\\ud800"}', 'body.name'],
  ])('in %s is 400 naming the field', async (_what, raw, path) => {
    const res = await t.call('POST', '/api/groups', { token: admin, raw, headers: json });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path, message: expect.stringContaining('lone UTF-16 surrogate') }]);
  });

  test('a pair written as two escapes is one character, and kept; an escaped backslash is only text', async () => {
    const raw = '{"name": "pair-\\ud83d\\ude00", "description": "\\\\ud800 is only text here"}';
    const res = await t.call('POST', '/api/groups', { token: admin, raw, headers: json });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'pair-😀', description: '\\ud800 is only text here' });
  });
});

describe('the query string', () => {
  test.each(['%FF', '%C0%AF', '%ED%A0%80'])('q=a%s is 400 naming the parameter', async (escaped) => {
    const res = await t.call('GET', `/api/groups?q=a${escaped}`, { token: admin });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: 'query.q', message: 'must be valid UTF-8' }]);
  });

  test('a % that starts no escape is a literal %, as before', async () => {
    expect((await t.call('GET', '/api/groups?q=100%', { token: admin })).status).toBe(200);
  });
});

describe('the scanners (no server)', () => {
  test('firstInvalidUtf8 agrees with a fatal decoder on every lead byte and its followers', () => {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    for (let a = 0x80; a <= 0xff; a++) {
      for (const b of [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0]) {
        for (const c of [0x80, 0xbf, 0x41]) {
          const bytes = Uint8Array.from([0x41, a, b, c, 0x80, 0x80]);
          let valid = true;
          try {
            decoder.decode(bytes);
          } catch {
            valid = false;
          }
          expect(firstInvalidUtf8(bytes) === -1).toBe(valid);
        }
      }
    }
  });

  test('jsonPathAt names the member a prefix ends in', () => {
    expect(jsonPathAt('{"a": {"b": [1, {"c": "x')).toEqual({ path: ['a', 'b', '1', 'c'], inName: false });
    expect(jsonPathAt('{"a": {"b')).toEqual({ path: ['a'], inName: true });
    expect(jsonPathAt('{"a\\"q": "v')).toEqual({ path: ['a"q'], inName: false });
  });
});
