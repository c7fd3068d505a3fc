import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { testInfra } from './infra-env';
import { TEST_AUDIENCE } from '../../scripts/infra/oidc-tokens';

export { freePort, isRunning } from '../../scripts/infra/processes';

export const ROOT = path.resolve(__dirname, '../..');

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one of the project's TypeScript entry points (as `npm run` would) to completion. */
export function runScript(script: string, args: string[], env: Record<string, string>): Promise<Finished> {
  const child = startScript(script, args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

export function startScript(script: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Settings for a real api process (`api/main.ts`) on the suite's infrastructure and a test database. */
export function apiProcessEnv(databaseUrl: string, env: Record<string, string>): Record<string, string> {
  return {
    Http__Host: '127.0.0.1',
    Database__Url: databaseUrl,
    Temporal__Address: testInfra().temporalAddress,
    Authentication__Oidc__Authority: testInfra().oidcIssuer,
    Authentication__Oidc__Audience: TEST_AUDIENCE,
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
    ...env,
  };
}
