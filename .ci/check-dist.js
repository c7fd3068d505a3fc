#!/usr/bin/env node
// After `npm run build`: what the image runs works from dist/ on this Node. The api, the
// worker and the CLI load every module they import (each then stops at the Database:Url it
// is given, exit 78, before connecting anywhere), and the worker's workflows bundle from
// dist/workflows as worker/run.ts bundles them, and a parsing thread loads its own entry from
// dist. The suite covers the rest, from source.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const dist = path.join(root, 'dist');

function fail(message) {
  process.stderr.write(`check-dist: ${message}\n`);
  process.exit(1);
}

const env = { PATH: process.env.PATH, HOME: process.env.HOME, Database__Url: 'not-a-url' };
for (const entry of ['api/main.js', 'worker/main.js', 'scripts/fleet.js migrate']) {
  const [file, ...args] = entry.split(' ');
  const run = spawnSync(process.execPath, [path.join(dist, file), ...args], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (run.status !== 78 || !run.stderr.includes('Database:Url')) {
    fail(`node dist/${entry} should stop at the bad Database:Url (exit 78), got exit ${run.status}:\n${run.stderr}`);
  }
}

async function bundle() {
  const { bundleWorkflowCode } = require('@temporalio/worker');
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  // The same resolution as worker/run.ts, from dist/worker/.
  const workflowsPath = require.resolve('../workflows', { paths: [path.join(dist, 'worker')] });
  if (!workflowsPath.startsWith(dist)) fail(`the worker would bundle ${workflowsPath}, not dist/workflows`);
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet });
  return `${(code.length / 1024 / 1024).toFixed(1)} MiB`;
}

/** A content large enough for the parsing threads, which load dist/platform/thread-entry.js on their own. */
async function parseOnThread() {
  const { checkContent, closeContentThreads } = require(path.join(dist, 'domain/configurations/content-check.js'));
  const content = Array.from({ length: 5000 }, (_, i) => `key${i}: ${i}`).join('\n');
  const problems = [await checkContent('yaml', content), await checkContent('yaml', `${content}\nkey1: again`)];
  await closeContentThreads();
  if (problems[0] !== undefined || !/Map keys must be unique/.test(problems[1] ?? '')) {
    fail(`a parsing thread did not check contents from dist: ${JSON.stringify(problems)}`);
  }
}

Promise.all([bundle(), parseOnThread()]).then(
  ([size]) =>
    process.stdout.write(
      `check-dist: api, worker and CLI load on Node ${process.versions.node}; workflows bundle from dist (${size}); contents parse on a thread\n`,
    ),
  (error) => fail(`the workflows do not bundle, or contents do not parse on a thread, from dist: ${error.stack}`),
);
