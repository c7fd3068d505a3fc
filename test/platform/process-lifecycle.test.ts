import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { startTestApp, type TestApp } from '../support/app';
import { apiProcessEnv, freePort, startScript } from '../support/processes';

let t: TestApp;
let api: ChildProcess;
let port: number;
let stdout = '';
let token: string;

async function waitUntilReady(): Promise<Response> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status === 200) return res;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`api did not become ready; output:\n${stdout}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  t = await startTestApp(); // a database of our own, and a PAT in it
  token = await t.pat('admin');
  port = await freePort();
  api = startScript(
    'api/main.ts',
    [],
    apiProcessEnv(t.database.url, {
      Environment: 'Production',
      Http__Port: String(port),
      Http__ShutdownDelaySeconds: '1',
      Agents__Listen: `127.0.0.1:${await freePort()}`,
    }),
  );
  api.stdout!.on('data', (d) => (stdout += d));
  api.stderr!.on('data', (d) => (stdout += d));
});
afterAll(async () => {
  if (api.exitCode === null) api.kill('SIGKILL');
  await t?.close();
});

test('the api process reports ready with Postgres and Temporal reachable', async () => {
  const res = await waitUntilReady();
  expect(await res.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
});

test('SIGTERM: readiness turns 503, the in-flight request finishes, then the listener closes and the process exits 0', async () => {
  const body = JSON.stringify({ displayName: 'written during shutdown' });
  const half = Math.floor(body.length / 2);
  let readyDuringDrain: number | undefined;
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/api/tenant',
        method: 'PUT',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    req.write(body.slice(0, half));
    setTimeout(() => {
      api.kill('SIGTERM');
      setTimeout(() => {
        // A failed probe fails the test through `response` instead of going unhandled.
        fetch(`http://127.0.0.1:${port}/readyz`)
          .then((ready) => {
            readyDuringDrain = ready.status;
            req.end(body.slice(half));
          })
          .catch(reject);
      }, 300);
    }, 200);
  });
  const exited = new Promise<number | null>((resolve) => api.on('exit', resolve));

  const finished = await response;
  expect(readyDuringDrain).toBe(503);
  expect(finished.status).toBe(200);
  expect(JSON.parse(finished.text).displayName).toBe('written during shutdown');
  expect(await exited).toBe(0);
  await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

  // the change and its audit row were committed before the process went away
  const row = await t.database.db('audit_calls').where({ method: 'PUT', path: '/api/tenant' }).first();
  expect(row).toMatchObject({ status: 200, actor_type: 'pat' });
});

test('logs are JSON lines that never contain the token', () => {
  const lines = stdout.trim().split('\n');
  for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  expect(stdout).not.toContain(token);
  expect(stdout).not.toContain(token.split('.')[1]);
  const messages = lines.map((l) => JSON.parse(l).msg);
  expect(messages).toEqual(
    expect.arrayContaining(['api listening', 'shutting down: finishing in-flight requests', 'stopped']),
  );
});
