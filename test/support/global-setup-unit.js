// The unit loop starts no server: it only finds Temporal's time-skipping test server (a local
// Java process a workflow test starts for itself), resolved from Maven Central once per
// machine (scripts/infra/temporal-test-server.ts), and hands its path to the test workers.
const { execFileSync } = require('node:child_process');
const path = require('node:path');

module.exports = async function globalSetup() {
  if (process.env.FLEET_TEMPORAL_TEST_SERVER) return;
  const root = path.resolve(__dirname, '../..');
  const script =
    "require('./scripts/infra/temporal-test-server.ts')" +
    '.ensureTemporalTestServer((line) => process.stderr.write(`[unit] ${line}\\n`))' +
    '.then((wrapper) => process.stdout.write(wrapper))';
  const wrapper = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.env.FLEET_TEMPORAL_TEST_SERVER = wrapper.trim();
};
