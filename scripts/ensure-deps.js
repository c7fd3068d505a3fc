#!/usr/bin/env node
// Installs npm dependencies when they are missing or older than package-lock.json, so
// `npm run dev` and `npm test` work on a fresh checkout. Plain Node: it runs before any
// dependency exists.
const { spawnSync } = require('node:child_process');
const { existsSync, statSync } = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const marker = path.join(root, 'node_modules', '.package-lock.json');
const lock = path.join(root, 'package-lock.json');
const stale = !existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs;
if (stale) {
  process.stderr.write('Installing npm dependencies (first run: about a minute)...\n');
  const started = Date.now();
  const result = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    process.stderr.write('npm install failed; see above.\n');
    process.exit(result.status ?? 1);
  }
  process.stderr.write(`Installed npm dependencies in ${Math.round((Date.now() - started) / 1000)}s.\n`);
}
