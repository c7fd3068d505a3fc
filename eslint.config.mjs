// Lint with type information (typescript-eslint's recommended type-checked rules): promises
// nobody awaits, async callbacks where a sync one is expected, `any` leaking into typed
// code, needless assertions. Formatting is prettier's job (`npm run format`), not eslint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      '**/dist/',
      'coverage/',
      '.dev-data/',
      'gateway/gen/',
      'console/src/api/schema.d.ts', // generated: npm run console:types
      'test-artifacts/',
      '**/*.js',
      '**/*.cjs',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `_name` marks a parameter a signature requires and the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Koa handlers and route factories are async by contract even when a body needs no await.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests and benches read JSON bodies (`any` by nature) and knex rows; db/ types knex's
    // raw rows at each repo function's boundary. Everything else keeps the no-unsafe rules.
    files: ['test/**', 'bench/**', 'db/**'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
