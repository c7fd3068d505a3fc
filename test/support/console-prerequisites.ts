/**
 * What the console's browser tests need besides the infrastructure, made ready by jest's
 * global setup (run as a child process under tsx): Debian's Chromium (installed with apt
 * when missing; playwright's own browser downloads cannot reach our machines) and a build
 * of the console no older than its sources. Anything it cannot do fails the suite.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { compressAssets } from '../../scripts/console-compress';

export const CHROMIUM = '/usr/bin/chromium';
const ROOT = path.resolve(__dirname, '../..');
const CONSOLE = path.join(ROOT, 'console');
const BUILT = path.join(CONSOLE, 'dist', 'index.html');

const log = (line: string) => process.stderr.write(`[console] ${line}\n`);

/** Runs a command to its end; its output shows only when it fails. */
function run(command: string, args: string[], env: Record<string, string> = {}): void {
  const result = spawnSync(command, args, {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...env },
  });
  if (result.status !== 0) process.stderr.write(`${result.stdout}${result.stderr}`);
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  if (process.getuid?.() !== 0) {
    throw new Error(`${CHROMIUM} is missing and only root can install it: run \`apt-get install -y chromium\` as root`);
  }
  log("installing Debian's chromium for the browser tests (first run on this machine: a minute or two)...");
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium']);
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is not there`);
}

/** The newest modification time of the files the console is built from. */
function newestSource(dir = CONSOLE): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * Puts a build in place under the feet of test runs that may be serving the old one (another
 * jest process on this checkout): the new hashed assets join the old ones, then index.html,
 * which names them, is replaced in one rename. Emptying dist first, as vite does, would serve
 * blank pages for as long as a build takes.
 */
function publishBuild(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || (entry.parentPath === from && entry.name === 'index.html')) continue;
    const target = path.join(to, path.relative(from, path.join(entry.parentPath, entry.name)));
    mkdirSync(path.dirname(target), { recursive: true });
    copyFileSync(path.join(entry.parentPath, entry.name), target);
  }
  const next = path.join(to, `index.html.${process.pid}`);
  copyFileSync(path.join(from, 'index.html'), next);
  renameSync(next, BUILT);
}

export function ensureConsoleBuilt(): void {
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= newestSource()) return;
  // The bundle only: `npm test` type-checks the console (tsc -p console) before jest runs,
  // so a type error fails the suite there, named, rather than as a failed global setup.
  log('building the console (vite build console)...');
  const staging = path.join(ROOT, 'node_modules', '.cache', `console-build-${process.pid}`);
  try {
    // The build users get (jest's NODE_ENV=test would make vite bundle React's development build).
    run('npx', ['vite', 'build', 'console', '--logLevel', 'warn', '--outDir', staging, '--emptyOutDir'], {
      NODE_ENV: 'production',
    });
    compressAssets(staging);
    publishBuild(staging, path.dirname(BUILT));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (require.main === module) {
  try {
    ensureChromium();
    ensureConsoleBuilt();
  } catch (error) {
    log((error as Error).message);
    process.exit(1);
  }
}
