// Three projects, so each loop starts only what it needs (docs/architecture.md, Tests):
// - unit (`*.unit.test.ts`, `npm run test:unit`): rules, codecs, parsers, the import rules,
//   workflow replays, workflow decisions with stub activities on Temporal's time-skipping
//   test server (a local process, found once per machine); no infrastructure, seconds;
// - integration: everything else outside test/console/, against the real Postgres, Temporal
//   dev server and OIDC issuer the global setup starts;
// - browser (test/console/): the same, plus the console built and Chromium.
// `npm test` runs all three.
//
// ESM-only packages (jose, openid-client, oauth4webapi, cel-js, diff) are transformed to CommonJS
// with swc like our own TypeScript; everything else in node_modules is left alone.
const esmOnly = ['jose', 'openid-client', 'oauth4webapi', '@marcbachmann/cel-js', 'diff'];

const common = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest'] },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
};
const infrastructure = {
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
};

/** @type {import('jest').Config} */
module.exports = {
  maxWorkers: 2,
  testTimeout: 30000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['**/*.unit.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup-unit.js',
    },
    {
      ...common,
      ...infrastructure,
      displayName: 'integration',
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: ['\\.unit\\.test\\.ts$', '/test/console/'],
    },
    {
      ...common,
      ...infrastructure,
      displayName: 'browser',
      testMatch: ['<rootDir>/test/console/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup-browser.js',
    },
  ],
};
