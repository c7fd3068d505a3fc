import type { ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';

/** Whether a process with this pid exists (a killed child counts until its parent has reaped it). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Resolves once `host:port` accepts a TCP connection; rejects if `child` (`name`, which is to
 * listen there) exits first, or after `timeoutMs`.
 */
export function waitForPort(
  host: string,
  port: number,
  timeoutMs: number,
  child: ChildProcess,
  name: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`${name} exited with code ${child.exitCode}`));
      const socket = connect({ host, port }, () => {
        socket.end();
        resolve();
      });
      socket.on('error', () => {
        socket.destroy();
        if (Date.now() > deadline)
          reject(new Error(`${name} did not listen on ${host}:${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}
