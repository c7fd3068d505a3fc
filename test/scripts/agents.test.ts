import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startTestGateway, issueBootstrapToken, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { startScript } from '../support/processes';

// npm run agents (scripts/agents.ts) against a real TLS agent listener: what it prints when
// things go wrong, and the dev stack's CA used when --ca is not given.

let t: TestApp;
let gateway: TestGateway;
let operator: string;
/** FLEET_DEV_DATA for a run: an empty directory (no dev stack) or one holding agent-ca.pem. */
let noDevStack: string;
let devStack: string;

beforeAll(async () => {
  t = await startTestApp();
  gateway = await startTestGateway(t);
  operator = await t.token('default.operator');
  noDevStack = mkdtempSync(path.join(os.tmpdir(), 'agents-no-dev-'));
  devStack = mkdtempSync(path.join(os.tmpdir(), 'agents-dev-'));
  writeFileSync(path.join(devStack, 'agent-ca.pem'), gateway.ca.certificatePem);
});
afterAll(async () => {
  rmSync(noDevStack, { recursive: true, force: true });
  rmSync(devStack, { recursive: true, force: true });
  await gateway?.close();
  await t?.close();
});

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
}

const runs: Run[] = [];
afterEach(() => {
  for (const run of runs.splice(0)) if (run.child.exitCode === null) run.child.kill('SIGKILL');
});

/** Starts the CLI and resolves once stdout matches `until` (the summary line it waits for). */
async function runAgentsUntil(args: string[], devData: string, until: RegExp): Promise<Run> {
  const child = startScript('scripts/agents.ts', args, { FLEET_DEV_DATA: devData });
  const run: Run = { child, stdout: '', stderr: '' };
  runs.push(run);
  child.stderr!.on('data', (d) => (run.stderr += d));
  await new Promise<void>((resolve, reject) => {
    const output = () => `${run.stdout}\n${run.stderr}`;
    const timer = setTimeout(() => reject(new Error(`no ${until} within 20 s:\n${output()}`)), 20_000);
    child.stdout!.on('data', (chunk) => {
      run.stdout += chunk;
      if (!until.test(run.stdout)) return;
      clearTimeout(timer);
      resolve();
    });
    child.on('exit', () => reject(new Error(`exited early:\n${output()}`)));
  });
  return run;
}

async function stop(run: Run): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => run.child.on('exit', resolve));
  run.child.kill('SIGINT');
  return exited;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const linesAbout = (stderr: string, kind: string) => stderr.split('\n').filter((l) => l.startsWith(`agents: ${kind}:`));

test('a server certificate the agents do not trust: the first error once, with the hint, then counted by kind', async () => {
  const { token } = await issueBootstrapToken(t, operator);
  const run = await runAgentsUntil(
    ['--count', '3', '--token', token, '--endpoint', gateway.wsUrl],
    noDevStack,
    /errors=[3-9]\d* \(untrusted-certificate=[3-9]\d*\) \(all started\)/,
  );
  expect(run.stderr).toMatch(/^starting 3 agent\(s\) against wss:\/\/127\.0\.0\.1:\d+\/v1\/opamp; Ctrl-C to stop\n/);
  expect(linesAbout(run.stderr, 'untrusted-certificate')).toHaveLength(1);
  expect(run.stderr).toMatch(
    /agents: untrusted-certificate: .*certificate.* \(the first; more of this kind are counted in the summary\)\n {2}hint: the server's certificate does not chain to a CA the agents trust: pass --ca <PEM of the CA that signed it> \(npm run dev's is \.dev-data\/agent-ca\.pem\)\n/,
  );
  expect(await stop(run)).toBe(0);
  expect(linesAbout(run.stderr, 'untrusted-certificate')).toHaveLength(1); // still once, however many retries
}, 30_000);

test("without --ca the dev stack's CA is used, and the first line says so", async () => {
  const { token } = await issueBootstrapToken(t, operator, { maxUses: 2 });
  const run = await runAgentsUntil(
    ['--count', '2', '--token', token, '--endpoint', gateway.wsUrl],
    devStack,
    /connected=2 enrolled=2 .*errors=0 \(all started\)/,
  );
  expect(run.stderr.split('\n')[0]).toBe(
    `starting 2 agent(s) against ${gateway.wsUrl}; trusting ${path.join(devStack, 'agent-ca.pem')} (npm run dev's CA; --ca for another); Ctrl-C to stop`,
  );
  expect(await stop(run)).toBe(0);
  expect(run.stderr).not.toMatch(/^agents: /m);
}, 30_000);

test('nothing listening: connection refused, with the hint about npm run dev', async () => {
  const endpoint = `ws://127.0.0.1:${await freePort()}/v1/opamp`;
  const run = await runAgentsUntil(
    ['--count', '2', '--token', 'svc-bt.unused', '--endpoint', endpoint],
    noDevStack,
    /\(connection-refused=\d+\) \(all started\)/,
  );
  expect(linesAbout(run.stderr, 'connection-refused')).toEqual([
    `agents: connection-refused: connect ECONNREFUSED ${endpoint.slice(5, endpoint.indexOf('/v1'))} (the first; more of this kind are counted in the summary)`,
  ]);
  expect(run.stderr).toContain(
    `  hint: nothing listens at ${endpoint.slice(5, endpoint.indexOf('/v1'))}: is npm run dev running? (its agent listener is localhost:4320)\n`,
  );
  expect(await stop(run)).toBe(0);
}, 30_000);

test('an unknown bootstrap token: refused with 401 once, with the hint about tokens', async () => {
  const run = await runAgentsUntil(
    ['--count', '2', '--token', 'svc-bt.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.aaaaaaa', '--endpoint', gateway.wsUrl],
    devStack,
    /refused=2 errors=0 \(refused-401=2\) \(all started\)/,
  );
  expect(linesAbout(run.stderr, 'refused-401')).toHaveLength(1);
  expect(run.stderr).toContain(
    '  hint: the bootstrap token is unknown, revoked, expired or used up: issue one with POST /api/tokens and pass it as --token\n',
  );
  expect(await stop(run)).toBe(0);
}, 30_000);

test('--unhealthy-after-apply takes a configuration hash or a probability, and says so otherwise', async () => {
  const child = startScript('scripts/agents.ts', ['--token', 'svc-bt.unused', '--unhealthy-after-apply', '1.5'], {
    FLEET_DEV_DATA: noDevStack,
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code).toBe(2);
  expect(stderr).toBe(
    'agents: --unhealthy-after-apply must be a configuration hash (64 hex digits) or a number from 0 to 1 (--help for usage)\n',
  );
}, 30_000);

test('--offers-applied takes all or ca-only, and says so otherwise', async () => {
  const child = startScript('scripts/agents.ts', ['--token', 'svc-bt.unused', '--offers-applied', 'endpoint'], {
    FLEET_DEV_DATA: noDevStack,
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  expect(code).toBe(2);
  expect(stderr).toBe('agents: --offers-applied must be all or ca-only (--help for usage)\n');
}, 30_000);
