// Starts the suite's real infrastructure once (see infra.ts) and hands its addresses to
// the test workers through the environment; meanwhile makes the browser tests' Chromium and
// console build ready (console-prerequisites.ts). If either fails, the suite fails.
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

/** Chromium installed and the console built (when stale), in a child process under tsx. */
function consolePrerequisites(root) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'console-prerequisites.ts')], {
    cwd: root,
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
  const root = path.resolve(__dirname, '../..');
  const consoleReady = consolePrerequisites(root);
  consoleReady.catch(() => {}); // awaited below; not an unhandled rejection if the infra fails first
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'infra.ts')], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  globalThis.__FLEET_INFRA__ = child;
  const info = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) =>
      reject(new Error(`test infrastructure failed to start (exit ${code}); see [infra] lines above`)),
    );
  });
  process.env.FLEET_TEST_INFRA = JSON.stringify(info);
  await consoleReady;
};
