// Starts the suite's real infrastructure once (see infra.ts) and hands its addresses to
// the test workers through the environment. If it cannot start, the suite fails.
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

module.exports = async function globalSetup() {
  const root = path.resolve(__dirname, '../..');
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
};
