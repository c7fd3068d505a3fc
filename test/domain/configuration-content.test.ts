import { createHash } from 'node:crypto';
import {
  contentBytes,
  contentHash,
  jsonErrorAt,
  keyDiff,
  parseContent,
  positionOf,
  unifiedDiff,
} from '../../domain/configurations/content';

describe('parseContent', () => {
  test('valid YAML and JSON parse to values; text is anything', () => {
    expect(parseContent('yaml', 'a: 1\nb: [x, y]\n')).toEqual({ ok: true, value: { a: 1, b: ['x', 'y'] } });
    expect(parseContent('json', '{"a": [1, {"b": null}]}')).toEqual({ ok: true, value: { a: [1, { b: null }] } });
    expect(parseContent('text', '{{ not: [yaml')).toEqual({ ok: true, value: '{{ not: [yaml' });
    expect(parseContent('yaml', '')).toEqual({ ok: true, value: null });
  });

  test.each([
    ['yaml', 'a: 1\nb: [1, 2\nc: 3\n', /^line 3, column 1: invalid YAML: Flow sequence/],
    ['yaml', 'a: 1\na: 2\n', /^line 2, column 1: invalid YAML: Map keys must be unique$/],
    ['yaml', 'receivers:\n\totlp: {}\n', /^line 2, column 1: invalid YAML: Tabs are not allowed/],
    ['yaml', 'a: 1\n---\nb: 2\n', /^line 2, column 1: invalid YAML: a configuration holds a single YAML document/],
    ['json', '{\n  "a": 1\n  "b": 2\n}', /^line 3, column 3: invalid JSON: expected ',' or '}'$/],
    ['json', '{"a": 1,}', /^line 1, column 9: invalid JSON: expected a double-quoted property name$/],
    ['json', '{"a":\n', /^line 2, column 1: invalid JSON: unexpected end of input, expected a value$/],
    ['json', '{\n  "a": [1, tru]\n}', /^line 2, column 12: invalid JSON: unexpected character "t", expected a value$/],
    ['json', '{"a": "x\\q"}', /^line 1, column 9: invalid JSON: invalid escape in string$/],
    ['json', '{"a": "x\ny"}', /^line 1, column 9: invalid JSON: control character in string$/],
    ['json', '[1, 2] 3', /^line 1, column 8: invalid JSON: unexpected content after the JSON value$/],
    ['json', '[01]', /^line 1, column 3: invalid JSON: expected ',' or ']'$/],
    ['json', '', /^line 1, column 1: invalid JSON: unexpected end of input/],
    ['text', 'ok\nnot\u0000ok', /^line 2, column 4: a NUL character cannot be stored$/],
    ['text', 'x\ud800', /^line 1, column 2: an unpaired UTF-16 surrogate cannot be stored$/],
  ] as const)('%s %j is refused with %s', (format, content, message) => {
    const parsed = parseContent(format, content);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.message).toMatch(message);
  });

  test('a YAML alias bomb is refused, not expanded', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      ...Array.from({ length: 8 }, (_, i) => {
        const prev = String.fromCharCode(97 + i);
        const next = String.fromCharCode(98 + i);
        return `${next}: &${next} [${Array(9).fill(`*${prev}`).join(',')}]`;
      }),
    ].join('\n');
    expect(parseContent('yaml', bomb).ok).toBe(false);
  });

  test('positions are 1-based lines and columns', () => {
    expect(positionOf('ab\ncd', 0)).toEqual({ line: 1, col: 1 });
    expect(positionOf('ab\ncd', 4)).toEqual({ line: 2, col: 2 });
  });
});

describe('size and hash', () => {
  test('size counts UTF-8 bytes; the hash is sha256 hex of them', () => {
    expect(contentBytes('é')).toBe(2);
    expect(contentHash('é')).toBe(
      createHash('sha256')
        .update(Buffer.from([0xc3, 0xa9]))
        .digest('hex'),
    );
  });
});

describe('keyDiff', () => {
  test('added, removed and changed paths, nested through objects and arrays', () => {
    const from = {
      service: { pipelines: { traces: { receivers: ['otlp'], exporters: ['debug'] } } },
      level: 'info',
      old: true,
    };
    const to = {
      service: { pipelines: { traces: { receivers: ['otlp', 'zipkin'], exporters: ['otlphttp'] } } },
      level: 'info',
      'x.y': 1,
    };
    expect(keyDiff(from, to)).toEqual([
      { op: 'added', path: 'service.pipelines.traces.receivers[1]', to: 'zipkin' },
      { op: 'changed', path: 'service.pipelines.traces.exporters[0]', from: 'debug', to: 'otlphttp' },
      { op: 'removed', path: 'old', from: true },
      { op: 'added', path: '["x.y"]', to: 1 },
    ]);
  });

  test('a change of type is one change with both values; equal documents have none', () => {
    expect(keyDiff({ a: [1] }, { a: { b: 1 } })).toEqual([{ op: 'changed', path: 'a', from: [1], to: { b: 1 } }]);
    expect(keyDiff(1, 2)).toEqual([{ op: 'changed', path: '', from: 1, to: 2 }]);
    expect(keyDiff({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toEqual([]);
  });
});

describe('unifiedDiff', () => {
  test('names both versions and shows the changed lines', () => {
    const patch = unifiedDiff('otel', { version: 1, content: 'a\nb\n' }, { version: 2, content: 'a\nc\n' });
    expect(patch).toContain('--- a/otel\tversion 1\n+++ b/otel\tversion 2\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n');
  });
});

describe('jsonErrorAt', () => {
  test('finds no error where JSON.parse finds none, deep nesting included', () => {
    const samples = [
      '{}',
      '[]',
      ' {"a": [1, -2.5e3, "x\\u00e9\\n", true, false, null, {}], "b": {"c": []}} ',
      '"s"',
      '0',
    ];
    for (const sample of samples) {
      expect(() => JSON.parse(sample)).not.toThrow();
      expect(jsonErrorAt(sample)).toBeUndefined();
    }
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    expect(jsonErrorAt(deep)).toBeUndefined();
  });
});
