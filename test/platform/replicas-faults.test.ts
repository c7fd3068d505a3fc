/**
 * Replicas under faults, as users run them: two api processes and a worker process on a
 * Postgres of the test's own and the suite's Temporal, behind HAProxy (HTTP for REST, TCP
 * passthrough for the agents), 200 simulated agents, a rollout of 10 batches. Mid-rollout
 * one api is killed (-9), later Postgres is restarted. The rollout completes; every agent
 * applied the version exactly once (no result lost, none twice) and runs it; every agent is
 * connected again, through the replica left. The full-size run, with the Temporal server
 * restarted too and figures, is issue 30's `npm run bench:replicas` (to come).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createDb, migrateLatest } from '../../db/connection';
import { ensureTenant } from '../../db/repos/tenants';
import { startFleet, type Fleet } from '../../scripts/agents/fleet';
import { ensureHaproxy, startHaproxy } from '../../scripts/infra/haproxy';
import { fetchToken } from '../../scripts/infra/oidc-tokens';
import { spawnPostgres, type PostgresChild } from '../../scripts/infra/postgres-child';
import { postgresUrl } from '../../scripts/infra/postgres-url';
import { eventually } from '../support/eventually';
import { testInfra } from '../support/infra-env';
import { apiProcessEnv, freePort, startScript } from '../support/processes';

const AGENTS = 200;

let dataDir: string;
let pgPort: number;
let postgres: PostgresChild | undefined;
let db: Knex;
let haproxy: ReturnType<typeof startHaproxy>;
let fleet: Fleet | undefined;
const processes: ChildProcess[] = [];
const output: string[] = [];
let base: string;
let operator: string;
/** HAProxy's ports: HTTP for REST, TCP for the agents. */
let lb: { http: number; agents: number };

function started(script: string, env: Record<string, string>): ChildProcess {
  const child = startScript(script, [], env);
  child.stdout!.on('data', (d) => output.push(String(d)));
  child.stderr!.on('data', (d) => output.push(String(d)));
  processes.push(child);
  return child;
}

/** One call through HAProxy; the raw answer. */
async function callOnce(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${operator}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // HAProxy may answer itself (a 502/503 page, not JSON).
  const json = res.headers.get('content-type')?.includes('json');
  return { status: res.status, body: json ? await res.json() : await res.text() };
}

/**
 * A call as a client of replicas makes it: a 502, 503 or 504 (HAProxy with no replica in
 * service for a moment — a health check slow on a busy machine, a replica just killed — or
 * an api whose dependency is away) is tried again after a moment, as `Retry-After` says.
 */
async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  for (let attempt = 1; ; attempt++) {
    const answer = await callOnce(method, url, body);
    if (![502, 503, 504].includes(answer.status) || attempt >= 60) return answer;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

beforeAll(async () => {
  ensureHaproxy();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'fleet-replicas-'));
  chmodSync(dataDir, 0o755); // the embedded server may run as the postgres user
  pgPort = await freePort();
  postgres = await spawnPostgres({ dataDir: path.join(dataDir, 'pg'), port: pgPort, database: 'fleet' });
  const url = postgresUrl(pgPort, 'fleet');
  db = createDb(url, 2);
  await migrateLatest(db);
  await ensureTenant(db, 'default');

  const taskQueue = `replicas-${randomBytes(4).toString('hex')}`;
  const shared = {
    Environment: 'Development',
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
    Temporal__TaskQueue: taskQueue,
    Logging__Level: 'warn',
  };
  const replicas = [];
  lb = { http: await freePort(), agents: await freePort() };
  for (let i = 0; i < 2; i++) {
    const replica = { http: await freePort(), agents: await freePort() };
    started(
      'api/main.ts',
      apiProcessEnv(url, {
        ...shared,
        Http__Port: String(replica.http),
        Http__PublicBaseUrl: `http://127.0.0.1:${lb.http}`,
        Http__TrustProxy: 'true',
        Agents__Listen: `127.0.0.1:${replica.agents}`,
        Agents__Plaintext: 'true',
      }),
    );
    // One at a time: the first makes the agents' CA, the second reads it.
    await eventually(
      async () => expect((await fetch(`http://127.0.0.1:${replica.http}/readyz`)).status).toBe(200),
      60_000,
    );
    replicas.push(replica);
  }
  started('worker/main.ts', {
    ...shared,
    Database__Url: url,
    Temporal__Address: testInfra().temporalAddress,
  });
  haproxy = startHaproxy(lb, replicas);
  base = `http://127.0.0.1:${lb.http}`;
  operator = await fetchToken(testInfra().oidcIssuer, 'default.operator');
  await eventually(async () => expect((await call('GET', '/api/groups?limit=1')).status).toBe(200), 30_000);
}, 180_000);

afterAll(async () => {
  await fleet?.stop().catch(() => {});
  for (const child of processes) if (child.exitCode === null) child.kill('SIGKILL');
  await haproxy?.stop();
  await db?.destroy();
  await postgres?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

test('a rollout through an api killed -9 and a Postgres restart: every agent applied once, and is connected again', async () => {
  const group = await call('POST', '/api/groups', { name: `replicas-${randomUUID().slice(0, 8)}` });
  const token = await call('POST', '/api/tokens', { name: 'replicas', groupId: group.body.id, maxUses: AGENTS });
  expect(token.status).toBe(201);
  fleet = startFleet({
    count: AGENTS,
    endpoint: `ws://127.0.0.1:${lb.agents}/v1/opamp`,
    token: token.body.token,
    csr: false,
    reconnectMinMs: 200,
    reconnectMaxMs: 2_000,
  });
  await fleet.ready;
  await fleet.waitForAll((state) => state.enrolled && state.connected, 60_000);

  const configuration = await call('POST', '/api/configurations', { name: 'replicas', format: 'yaml' });
  const version = await call('POST', `/api/configurations/${configuration.body.id}/versions`, {
    content: 'replicas: under faults\n',
  });
  expect(
    (await call('POST', `/api/configurations/${configuration.body.id}/versions/${version.body.version}/publish`))
      .status,
  ).toBe(200);
  const rollout = await call('POST', '/api/rollouts', {
    configurationId: configuration.body.id,
    version: version.body.version,
    target: { groupIds: [group.body.id] },
    strategy: { batchPercent: 10, bakeSeconds: 2 },
  });
  expect(rollout.status).toBe(201);
  expect((await call('POST', `/api/rollouts/${rollout.body.id}/start`)).status).toBe(200);
  /** The rollout as the API says (a read that meets a fault is tried again). */
  const state = () =>
    eventually(async () => {
      const res = await call('GET', `/api/rollouts/${rollout.body.id}`);
      expect(res.status).toBe(200);
      return res.body;
    }, 30_000);

  // Batch 3 under way: the first api is killed, its agents reconnect through HAProxy to the other.
  await eventually(async () => expect((await state()).currentBatch).toBeGreaterThanOrEqual(3), 120_000);
  processes[0]!.kill('SIGKILL');
  // Batch 6: Postgres restarts under the api, the worker and the rollout.
  await eventually(async () => expect((await state()).currentBatch).toBeGreaterThanOrEqual(6), 120_000);
  expect((await state()).state).toBe('running'); // mid-rollout
  await postgres!.stop();
  postgres = await spawnPostgres({ dataDir: path.join(dataDir, 'pg'), port: pgPort, database: 'fleet' });

  const done = await eventually(async () => {
    const now = await state();
    expect(now.state).toBe('completed');
    return now;
  }, 240_000);
  expect(done.progress).toMatchObject({ total: AGENTS, succeeded: AGENTS, failed: 0, skipped: 0 });
  // Exactly once: one `applied` entry per agent in this rollout's history, none missing.
  const applied: Array<{ agent_id: string; n: string }> = await db('agent_history')
    .where({ rollout_id: rollout.body.id, kind: 'applied' })
    .groupBy('agent_id')
    .select('agent_id', db.raw('count(*) AS n'));
  expect(applied).toHaveLength(AGENTS);
  expect(applied.filter((row) => Number(row.n) !== 1)).toEqual([]);
  // Every agent runs the version, connected again (through the replica left): those of the
  // killed replica reconnected.
  await fleet.waitForAll((agent) => agent.connected && agent.lastConfigHash === version.body.contentHash, 60_000);
  expect(fleet.agents.filter((agent) => agent.state.connects > 1).length).toBeGreaterThan(0);
}, 480_000);
