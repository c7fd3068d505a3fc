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

describe('the parsing budget: refused by a linear scan before any parse', () => {
  const lines = (count: number, line: (i: number) => string) =>
    Array.from({ length: count }, (_, i) => line(i)).join('\n');

  test.each([
    [
      '600 KB of nested [',
      'yaml',
      '['.repeat(600_000),
      /^line 1, column 256: invalid YAML: nested deeper than 256 levels$/,
    ],
    ['nested {', 'yaml', '{a: '.repeat(150_000), /nested deeper than 256 levels/],
    ['300,000 compact sequences', 'yaml', `${'- '.repeat(300_000)}x`, /nested deeper than 256 levels/],
    [
      'a sequence under a key, nested',
      'yaml',
      lines(300, (i) => `${' '.repeat(i * 2)}k${i}:`),
      /nested deeper than 256 levels/,
    ],
    [
      '1,000 levels of indentation',
      'yaml',
      lines(1000, (i) => `${' '.repeat(i)}k:`),
      /^line 129, column 129: .*nested deeper/,
    ],
    [
      '100,000 aliases',
      'yaml',
      `a: &a x\n${lines(100_000, (i) => `k${i}: *a`)}`,
      /^line 1002, column 8: invalid YAML: more than 1000 aliases$/,
    ],
    ['100,000 anchors', 'yaml', lines(100_000, (i) => `k${i}: &a${i} x`), /more than 1000 anchors/],
    [
      'a million [ of JSON',
      'json',
      '['.repeat(1_000_000),
      /^line 1, column 257: invalid JSON: nested deeper than 256 levels$/,
    ],
  ] as const)('%s', (_what, format, content, message) => {
    const parsed = parseContent(format, content);
    expect(!parsed.ok && parsed.message).toMatch(message);
  });

  test('what only looks like nesting or aliases is not counted: quotes, comments, block scalars, plain text', () => {
    const brackets = '['.repeat(300);
    const yaml = [
      `quoted: "${brackets} *a &b"`,
      `single: '${brackets} it''s *a'`,
      `# ${brackets} *a &a`,
      'script: |',
      `  ${brackets}`,
      `  ${Array(2000).fill('*x').join(' ')}`,
      'folded: >-',
      `  ${brackets}`,
      `plain: Tom & Jerry *not-an-alias [not flow]`,
      `cron: 0 * * * *`,
      `url: http://example.com/a[1]`,
      'list:',
      '- a',
      '- b: [1, {c: d}]',
    ].join('\n');
    const parsed = parseContent('yaml', yaml);
    expect(parsed).toMatchObject({ ok: true, value: { quoted: `${brackets} *a &b`, cron: '0 * * * *' } });
    expect(parseContent('json', JSON.stringify({ text: brackets, nested: [[[1]]] })).ok).toBe(true);
  });

  test('anchors and aliases within the limits, and 256 levels exactly, parse', () => {
    const anchored = `${lines(1000, (i) => `a${i}: &a${i} v${i}`)}\n${lines(1000, (i) => `b${i}: *a${i}`)}`;
    const parsed = parseContent('yaml', anchored);
    expect(parsed.ok && (parsed.value as Record<string, string>).b999).toBe('v999');
    expect(parseContent('json', `${'['.repeat(256)}${']'.repeat(256)}`).ok).toBe(true);
    expect(parseContent('yaml', `a: ${'['.repeat(250)}${']'.repeat(250)}`).ok).toBe(true);
  });

  test('a map of 40,000 keys is checked for duplicate keys in one pass; the duplicate is named', () => {
    const map = lines(40_000, (i) => `key${i}: ${i}`);
    expect(parseContent('yaml', map).ok).toBe(true);
    const parsed = parseContent('yaml', `${map}\nkey5: again`);
    expect(!parsed.ok && parsed.message).toBe('line 40001, column 1: invalid YAML: Map keys must be unique');
    // The parser's own rule: the same scalar value is the same key, a number and a string are not.
    expect(parseContent('yaml', 'a: 1\n"a": 2').ok).toBe(false);
    expect(parseContent('yaml', '1: x\n"1": y').ok).toBe(true);
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
