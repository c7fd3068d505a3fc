import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { waitForPort } from './processes';
import os from 'node:os';
import path from 'node:path';

/** The CLI release we build when none is installed; later tags cannot be `go install`ed. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';

/** Search attributes that workflows set so operators can find them in the Temporal UI. */
export const SEARCH_ATTRIBUTES = {
  TenantId: 'Keyword',
  RolloutId: 'Keyword',
  ConfigurationId: 'Keyword',
  RolloutState: 'Keyword',
  GitSourceId: 'Keyword',
  FederatedRolloutState: 'Keyword',
} as const;

export class MissingToolError extends Error {}

function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'fleet-config', `temporal-${TEMPORAL_CLI_VERSION}`);
}

function onPath(command: string): string | undefined {
  const result = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const found = result.stdout.trim();
  return result.status === 0 && found ? found : undefined;
}

/**
 * Finds the Temporal CLI: $TEMPORAL_CLI, then PATH, then our cache outside the checkout;
 * failing those, builds it with Go into the cache (several minutes, once per machine).
 */
export async function ensureTemporalCli(log: (line: string) => void): Promise<string> {
  const explicit = process.env.TEMPORAL_CLI;
  if (explicit) {
    if (!existsSync(explicit)) throw new MissingToolError(`TEMPORAL_CLI points to ${explicit}, which does not exist`);
    return explicit;
  }
  const installed = onPath('temporal');
  if (installed) return installed;
  const dir = cacheDir();
  const cached = path.join(dir, 'temporal');
  if (existsSync(cached)) return cached;
  if (!onPath('go')) {
    throw new MissingToolError(
      'Temporal CLI not found: install it (https://docs.temporal.io/cli, `temporal` on PATH) or install Go >= 1.25 so it can be built',
    );
  }
  mkdirSync(dir, { recursive: true });
  await buildWithGo(dir, log);
  return cached;
}

async function buildWithGo(dir: string, log: (line: string) => void): Promise<void> {
  const started = Date.now();
  log(
    `Building the Temporal CLI ${TEMPORAL_CLI_VERSION} with Go into ${dir} (first run only; about 5 minutes on 2 cores)...`,
  );
  const child = spawn('go', ['install', `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`], {
    env: { ...process.env, GOBIN: dir, CGO_ENABLED: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let downloaded = 0;
  let tail = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-2000);
    downloaded += (chunk.match(/go: downloading/g) ?? []).length;
  });
  const progress = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    log(`  ...still building the Temporal CLI: ${seconds}s elapsed, ${downloaded} modules downloaded`);
  }, 20_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(progress);
  if (code !== 0)
    throw new MissingToolError(
      `Building the Temporal CLI with Go failed (exit ${code}): ${tail.trim().split('\n').pop()}`,
    );
  log(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)}s.`);
}

export interface RunningTemporal {
  address: string;
  uiUrl?: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` and resolves once its frontend accepts connections. */
export async function startTemporal(options: {
  cli: string;
  port: number;
  uiPort?: number;
  dbFile?: string;
  namespace?: string;
  log?: (line: string) => void;
}): Promise<RunningTemporal> {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--log-level', 'warn'];
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  if (options.namespace && options.namespace !== 'default') args.push('--namespace', options.namespace);
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  // Its own process group: a terminal's Ctrl-C must not stop it before its clients.
  const child = spawn(options.cli, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const log = options.log ?? (() => {});
  child.stdout.setEncoding('utf8').on('data', (d: string) => log(d.trimEnd()));
  child.stderr.setEncoding('utf8').on('data', (d: string) => log(d.trimEnd()));
  await waitForPort('127.0.0.1', options.port, 60_000, child, 'Temporal dev server');
  return {
    address: `127.0.0.1:${options.port}`,
    uiUrl: options.uiPort ? `http://localhost:${options.uiPort}` : undefined,
    process: child,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
