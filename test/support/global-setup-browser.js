// The browser tests' setup: the infrastructure (global-setup.js), and meanwhile Chromium
// installed and the console built when stale (console-prerequisites.ts). If either fails,
// the suite fails.
const { spawn } = require('node:child_process');
const path = require('node:path');
const infrastructure = require('./global-setup');

/** Chromium installed and the console built (when stale), in a child process under tsx. */
function consolePrerequisites() {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'console-prerequisites.ts')], {
    cwd: path.resolve(__dirname, '../..'),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`console prerequisites failed (exit ${code}); see [console] lines above`)),
    );
  });
}

module.exports = async function globalSetup() {
  const consoleReady = consolePrerequisites();
  consoleReady.catch(() => {}); // awaited below; not an unhandled rejection if the infra fails first
  await infrastructure();
  await consoleReady;
};
