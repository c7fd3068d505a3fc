/**
 * Contents built to cost the parser far more than their size: refused by the scan before any
 * parse, naming where; heavy but honest documents are parsed on the parsing threads while
 * the api goes on answering.
 */
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let operator: string;
beforeAll(async () => {
  t = await startTestApp();
  operator = await t.token('default.operator');
});
afterAll(() => t?.close());

const lines = (count: number, line: (i: number) => string) =>
  Array.from({ length: count }, (_, i) => line(i)).join('\n');

async function configuration(format: 'yaml' | 'json'): Promise<string> {
  const res = await t.call('POST', '/api/configurations', {
    token: operator,
    body: { name: `hostile-${randomUUID()}`, format },
  });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const save = (id: string, content: string) =>
  t.call('POST', `/api/configurations/${id}/versions`, { token: operator, body: { content } });

test.each([
  [
    '600 KB of nested [',
    'yaml',
    '['.repeat(600_000),
    'line 1, column 256: invalid YAML: nested deeper than 256 levels',
  ],
  ['300,000 compact sequences', 'yaml', `${'- '.repeat(300_000)}x`, 'invalid YAML: nested deeper than 256 levels'],
  [
    '90,000 aliases',
    'yaml',
    `a: &a x\n${lines(90_000, (i) => `k${i}: *a`)}`,
    'line 1002, column 8: invalid YAML: more than 1000 aliases',
  ],
  ['50,000 anchors', 'yaml', lines(50_000, (i) => `k${i}: &a${i} x`), 'invalid YAML: more than 1000 anchors'],
  [
    'a million [ of JSON',
    'json',
    '['.repeat(1_000_000),
    'line 1, column 257: invalid JSON: nested deeper than 256 levels',
  ],
] as const)('%s: 400 naming body.content and where, nothing stored', async (_what, format, content, message) => {
  const id = await configuration(format);
  const res = await save(id, content);
  expect(res.status).toBe(400);
  expect(res.body.type).toBe('http://fleet.test/errors/validation-failed');
  expect(res.body.errors).toEqual([{ path: 'body.content', message: expect.stringContaining(message) }]);
  expect((await t.call('GET', `/api/configurations/${id}/versions`, { token: operator })).body.items).toEqual([]);
});

test('a heavy honest document (40,000 keys, 800 KB) is saved; its duplicate key is named by line; two such compare', async () => {
  const id = await configuration('yaml');
  const map = lines(40_000, (i) => `key${i}:\n  v: ${i}`);
  const saved = await save(id, map);
  expect(saved.status).toBe(201);
  const duplicate = await save(id, `${map}\nkey7:\n  v: again\n`);
  expect(duplicate.status).toBe(400);
  expect(duplicate.body.errors[0].message).toBe('line 80001, column 1: invalid YAML: Map keys must be unique');
  expect((await save(id, map.replace('key39999:\n  v: 39999', 'key39999:\n  v: changed'))).status).toBe(201);
  const compared = await t.call('GET', `/api/configurations/${id}/versions/compare?from=1&to=2`, { token: operator });
  expect(compared.status).toBe(200);
  expect(compared.body.changes).toEqual([{ op: 'changed', path: 'key39999.v', from: 39999, to: 'changed' }]);
});

test('while heavy documents are being parsed, the api answers other requests', async () => {
  const id = await configuration('yaml');
  let pending = 6;
  const uploads = Array.from({ length: 6 }, (_, n) =>
    save(
      id,
      lines(40_000, (i) => `key${i}: ${n}`),
    ).finally(() => pending--),
  );
  const health = await t.call('GET', '/healthz');
  const stillParsing = pending;
  expect(health.status).toBe(200);
  expect(stillParsing).toBeGreaterThan(0);
  expect((await Promise.all(uploads)).map((res) => res.status)).toEqual(Array(6).fill(201));
});
