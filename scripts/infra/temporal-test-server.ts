/**
 * Temporal's time-skipping test server (Java), for workflow tests on
 * `TestWorkflowEnvironment.createTimeSkipping`. The SDK downloads it from a host this
 * workplace cannot reach; Maven Central has it. We resolve its classpath with Maven once per
 * machine into the cache beside the Temporal CLI, and write a wrapper script that starts it
 * (`<wrapper> <port>`), which the SDK runs as an existing executable.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MissingToolError } from './temporal';

export const TEST_SERVER_VERSION = '1.31.0';

function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'fleet-config', `temporal-test-server-${TEST_SERVER_VERSION}`);
}

const POM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>fleet-config</groupId>
  <artifactId>temporal-test-server-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>${TEST_SERVER_VERSION}</version>
    </dependency>
  </dependencies>
</project>
`;

function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) => reject(new MissingToolError(`${command}: ${error.message}`)));
    child.on('exit', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output.slice(-2000)}`)),
    );
  });
}

/**
 * The wrapper script's path: from the cache, or resolved now with Maven (Java 17+ and
 * `mvn` needed; about a minute the first time).
 */
export async function ensureTemporalTestServer(log: (line: string) => void): Promise<string> {
  const dir = cacheDir();
  const wrapper = path.join(dir, 'temporal-test-server');
  if (existsSync(wrapper)) return wrapper;
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  log(`Resolving Temporal's test server ${TEST_SERVER_VERSION} from Maven Central into ${dir} (first run only)...`);
  writeFileSync(path.join(dir, 'pom.xml'), POM);
  await run('mvn', ['-q', '-B', 'dependency:build-classpath', '-Dmdep.outputFile=classpath.txt'], dir);
  const classpath = readFileSync(path.join(dir, 'classpath.txt'), 'utf8').trim();
  if (!classpath) throw new Error('Maven resolved an empty classpath for the Temporal test server');
  // Written last, so a failed resolution is retried on the next run.
  writeFileSync(wrapper, `#!/bin/sh\nexec java -cp '${classpath}' io.temporal.testserver.TestServer "$@"\n`);
  chmodSync(wrapper, 0o755);
  log(`Temporal test server ready in ${Math.round((Date.now() - started) / 1000)} s.`);
  return wrapper;
}
