import {
  diffWithDesired,
  EFFECTIVE_CONFIG_MAX_BYTES,
  fileOfDesired,
  formatOfFile,
  isSecretKey,
  keptEffectiveConfig,
  REDACTED,
  redactSecrets,
} from '../../domain/effective-config';

const file = (name: string, contentType: string, body: string) => ({
  name,
  contentType,
  body: Buffer.from(body, 'utf8'),
});

test('a key names a secret by the words in it, not when it names where the secret is', () => {
  for (const key of [
    'password',
    'api_key',
    'apiKey',
    'X-API-Key',
    'Authorization',
    'client_secret',
    'bearer_token',
    'privateKey',
  ])
    expect(isSecretKey(key)).toBe(true);
  for (const key of ['endpoint', 'token_url', 'key_file', 'password_file', 'ca_file', 'auth', 'insecure', 'timeout'])
    expect(isSecretKey(key)).toBe(false);
});

test('YAML: secret values, nested or in headers, and passwords in URLs are redacted; the rest reads as written', () => {
  const yaml = [
    '# the collector',
    'exporters:',
    '  otlphttp:',
    '    endpoint: https://collector.example:4318',
    '    headers:',
    '      Authorization: "Bearer abc123"',
    '      x-api-key: k-999',
    '  kafka:',
    '    brokers: [kafka://svc:hunter2@kafka:9092]',
    '    auth:',
    '      sasl: { username: svc, password: hunter2 }',
    '  other:',
    '    token: ${env:OTHER_TOKEN}',
    '',
  ].join('\n');
  const { content, redacted } = redactSecrets('yaml', yaml);
  expect(redacted).toBe(4);
  expect(content).not.toContain('abc123');
  expect(content).not.toContain('k-999');
  expect(content).not.toContain('hunter2');
  expect(content).toContain(`kafka://svc:${REDACTED}@kafka:9092`);
  expect(content).toContain('${env:OTHER_TOKEN}'); // a reference, not a secret
  expect(content).toContain('# the collector');
  expect(content).toContain('endpoint: https://collector.example:4318');
  // Nothing to redact: the very text, not a re-serialisation.
  const plain = 'receivers:\n  otlp:   {}\n';
  expect(redactSecrets('yaml', plain)).toEqual({ content: plain, redacted: 0 });
});

test('JSON and plain text are redacted too; YAML that does not parse falls back to lines', () => {
  const json = redactSecrets('json', '{"exporters":{"x":{"headers":{"api-key":"s3cr3t"},"retries":3}}}');
  expect(json.redacted).toBe(1);
  expect(JSON.parse(json.content)).toEqual({ exporters: { x: { headers: { 'api-key': REDACTED }, retries: 3 } } });
  const text = redactSecrets('text', 'USER=svc\nPASSWORD=hunter2\nURL=postgres://svc:hunter2@db/x\n');
  expect(text.content).toBe(`USER=svc\nPASSWORD=${REDACTED}\nURL=postgres://svc:${REDACTED}@db/x\n`);
  const broken = redactSecrets('yaml', 'a: [\n  password: hunter2\n');
  expect(broken.content).toBe(`a: [\n  password: ${REDACTED}\n`);
});

test('what is kept of a report: files by name, redacted, and only names and sizes past the bound', () => {
  const kept = keptEffectiveConfig([file('b.yaml', 'text/yaml', 'token: t\n'), file('a.yaml', '', 'x: 1\n')]);
  expect(kept).toEqual({
    kept: true,
    redacted: 1,
    files: [
      { name: 'a.yaml', contentType: '', bytes: 5, content: 'x: 1\n' },
      { name: 'b.yaml', contentType: 'text/yaml', bytes: 9, content: `token: ${REDACTED}\n` },
    ],
  });
  const huge = keptEffectiveConfig([file('big', 'text/yaml', 'x'.repeat(EFFECTIVE_CONFIG_MAX_BYTES + 1))]);
  expect(huge).toEqual({
    kept: false,
    redacted: 0,
    files: [{ name: 'big', contentType: 'text/yaml', bytes: EFFECTIVE_CONFIG_MAX_BYTES + 1, content: null }],
  });
  // A NUL cannot be stored: it becomes U+FFFD.
  expect(keptEffectiveConfig([file('n', '', 'a\u0000b')]).files[0]!.content).toBe('a\uFFFDb');
});

test('the desired version against the reported file: redacted alike, empty when the same, a diff when not', () => {
  const desired = { name: 'collector', format: 'yaml' as const, version: 3, content: 'a: 1\npassword: p1\n' };
  const same = keptEffectiveConfig([file('collector', 'text/yaml', 'a: 1\npassword: p1\n')]).files[0]!;
  expect(diffWithDesired(desired, { ...same, content: same.content! })).toBe('');
  // Another secret value alone is no visible difference (the two redact to the same text).
  const otherSecret = keptEffectiveConfig([file('collector', 'text/yaml', 'a: 1\npassword: p2\n')]).files[0]!;
  expect(diffWithDesired(desired, { ...otherSecret, content: otherSecret.content! })).toBe('');
  const drifted = keptEffectiveConfig([file('collector', 'text/yaml', 'a: 2\npassword: p1\n')]).files[0]!;
  const diff = diffWithDesired(desired, { ...drifted, content: drifted.content! });
  expect(diff).toContain('--- desired/collector\tversion 3');
  expect(diff).toContain('+++ effective/collector\treported');
  expect(diff).toContain('-a: 1');
  expect(diff).toContain('+a: 2');
  expect(diff).not.toContain('p1');
});

test('which reported file is the desired configuration, and the format of a file', () => {
  const files = keptEffectiveConfig([file('collector', '', 'a'), file('extra', '', 'b')]).files;
  expect(fileOfDesired(files, 'collector')?.name).toBe('collector');
  expect(fileOfDesired(files, 'another')).toBeUndefined();
  expect(fileOfDesired(files.slice(1), 'another')?.name).toBe('extra');
  expect(formatOfFile('application/json')).toBe('json');
  expect(formatOfFile('text/yaml; charset=utf-8')).toBe('yaml');
  expect(formatOfFile('', 'yaml')).toBe('yaml');
  expect(formatOfFile('text/plain', 'yaml')).toBe('text');
});
