// ESM-only packages (jose, openid-client, oauth4webapi, cel-js, diff) are transformed to CommonJS
// with swc like our own TypeScript; everything else in node_modules is left alone.
const esmOnly = ['jose', 'openid-client', 'oauth4webapi', '@marcbachmann/cel-js', 'diff'];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest'] },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  maxWorkers: 2,
  testTimeout: 30000,
};
