// Starts the suite's real infrastructure once (see infra.ts) and hands its addresses to the
// test workers through the environment. Each project that needs it names this setup; the
// first one starts it and the others find it running (they share jest's process). If it
// cannot start, the suite fails.
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

function startInfrastructure() {
  const root = path.resolve(__dirname, '../..');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'infra.ts')], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  globalThis.__FLEET_INFRA__ = child;
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    lines.once('line', (line) => resolve(JSON.parse(line)));
    child.once('exit', (code) =>
      reject(new Error(`test infrastructure failed to start (exit ${code}); see [infra] lines above`)),
    );
  });
}

module.exports = async function globalSetup() {
  globalThis.__FLEET_INFRA_READY__ ??= startInfrastructure();
  const infra = await globalThis.__FLEET_INFRA_READY__;
  process.env.FLEET_TEST_INFRA = JSON.stringify(infra);
  process.env.FLEET_TEMPORAL_TEST_SERVER = infra.temporalTestServer;
};
