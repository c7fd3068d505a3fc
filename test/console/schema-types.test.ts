import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { openApiDocumentOf, SCHEMA_TYPES_FILE } from '../../scripts/console/schema-types';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

/** The types generated from a document, as `npm run console:types` writes them (its generator, under tsx). */
function generate(document: object): string {
  const generator = require.resolve('../../scripts/console/schema-types');
  const result = spawnSync(process.execPath, ['--import', 'tsx', generator], {
    input: JSON.stringify(document),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`the generator failed: ${result.stderr}`);
  return result.stdout;
}

test('the console’s committed API types are what the app’s OpenAPI document generates (else: npm run console:types)', () => {
  const committed = readFileSync(SCHEMA_TYPES_FILE, 'utf8');
  const generated = generate(openApiDocumentOf(t.app.routes));
  // One line on failure, not a 10,000-line diff.
  expect(committed === generated ? 'up to date' : 'stale: run npm run console:types').toBe('up to date');
});

test('a change to a route’s schema makes them stale', () => {
  const [first, ...others] = t.app.routes;
  const renamed = { ...first!, path: `${first!.path}-renamed` };
  expect(generate(openApiDocumentOf([renamed, ...others]))).not.toBe(readFileSync(SCHEMA_TYPES_FILE, 'utf8'));
});
