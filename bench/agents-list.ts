/**
 * `GET /api/agents?label=env:prod&limit=50` over 100,000 agents of one tenant: the first
 * page, and a page 50,000 rows deep (reached by following cursors), p50/p99 of each.
 *
 *   node --import tsx bench/agents-list.ts [--duration 10] [--connections 4] [--agents 100000]
 *
 * Real parts: embedded Postgres, the full app (bench/platform-server.ts) in a child
 * process, autocannon in this one. It also times the two statements every list call runs
 * (the keyset page and the `count(*)` behind X-Total-Count) straight on Postgres, so the
 * share of each is visible.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type { Knex } from 'knex';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { insertAgents, listAgentsQuery, type NewAgent } from '../db/repos/agents';
import { ensureDefaultGroup, insertGroup } from '../db/repos/groups';
import { insertPat } from '../db/repos/pats';
import { ensureTenant } from '../db/repos/tenants';
import { runBench, startBenchDatabase, startBenchServers } from './support';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '4' },
    agents: { type: 'string', default: '100000' },
  },
});
const duration = Number(args.duration);
const connections = Number(args.connections);
const agentCount = Number(args.agents);
const DEPTH = 50_000;
const TENANT = 'default';

/** env: 60 % prod (so a page 50,000 rows deep exists), 25 % staging, 15 % dev. */
function envOf(i: number): string {
  const bucket = i % 20;
  return bucket < 12 ? 'prod' : bucket < 17 ? 'staging' : 'dev';
}
const REGIONS = ['eu-west', 'eu-central', 'us-east', 'us-west', 'ap-south'];
const STATUSES = ['online', 'online', 'online', 'offline', 'enrolling'] as const;

async function seed(db: Knex): Promise<void> {
  await ensureTenant(db, TENANT);
  const groups = [(await ensureDefaultGroup(db, TENANT)).id];
  for (let g = 0; g < 9; g++)
    groups.push((await insertGroup(db, TENANT, { name: `group-${g}`, description: '', labels: {} })).id);
  const batch = 10_000;
  for (let start = 0; start < agentCount; start += batch) {
    const agents: NewAgent[] = [];
    for (let i = start; i < Math.min(agentCount, start + batch); i++) {
      agents.push({
        id: randomUUID(),
        tenant_id: TENANT,
        group_id: groups[i % groups.length]!,
        name: `collector-${i}`,
        labels: { env: envOf(i), region: REGIONS[i % REGIONS.length]!, team: `team-${i % 40}` },
        status: STATUSES[i % STATUSES.length],
        capabilities: 0x1fff,
        description: { identifying: { 'service.name': 'otelcol', 'host.name': `host-${i}` } },
      });
    }
    await insertAgents(db, agents);
  }
  await db.raw('VACUUM ANALYZE agents');
}

async function patFor(db: Knex): Promise<string> {
  const token = generateToken('svc-pat');
  await insertPat(db, {
    tenant_id: TENANT,
    name: 'bench-agents',
    token_hash: hashToken(token),
    role: 'viewer',
    allowed_endpoints: null,
    expires_at: new Date(Date.now() + 86_400_000),
    created_by: 'bench',
  });
  return token;
}

/** Follows `nextCursor` with pages of 1000 until `depth` rows lie behind it. */
async function deepCursor(base: string, token: string, depth: number): Promise<string> {
  let cursor: string | undefined;
  for (let seen = 0; seen < depth; seen += 1000) {
    const url = `${base}/api/agents?label=env:prod&limit=1000${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
    cursor = ((await res.json()) as { nextCursor: string }).nextCursor;
  }
  return cursor!;
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string, token: string): Promise<Figures> {
  const headers = { authorization: `Bearer ${token}` };
  await autocannon({ url, connections, duration: 2, headers }); // warm-up
  const result = await autocannon({ url, connections, duration, headers });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/** Median and p99 in ms of `runs` sequential executions of a statement, straight on Postgres. */
async function timeSql(
  query: Knex.QueryBuilder | (() => PromiseLike<unknown>),
  runs = 200,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < runs + 10; i++) {
    const started = process.hrtime.bigint();
    await (typeof query === 'function' ? query() : query.clone());
    if (i >= 10) times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(runs * 0.5)]!, p99: times[Math.floor(runs * 0.99)]! };
}

async function sqlFigures(db: Knex, deepAfter: string) {
  const filtered = () => listAgentsQuery(db, TENANT, { labels: { env: 'prod' } });
  const page = (after?: string) => {
    const q = filtered().orderBy('id').limit(51);
    if (after) q.where('id', '>', after);
    return q;
  };
  const count = filtered().clearSelect().count({ n: '*' });
  return {
    first: await timeSql(page()),
    deep: await timeSql(page(deepAfter)),
    count: await timeSql(count, 50),
    // what the fixes proposed in docs/performance.md would cost instead
    capped: await timeSql(
      () => db.count({ n: '*' }).from(filtered().clearSelect().select(db.raw('1')).limit(10_001).as('capped')),
      50,
    ),
    estimate: await timeSql(() => db.raw(`EXPLAIN (FORMAT JSON) ${count.toQuery()}`)),
    pagePlan: await plan(db, page(deepAfter)),
    countPlan: await plan(db, count),
  };
}

async function plan(db: Knex, query: Knex.QueryBuilder): Promise<string> {
  return (await db.raw(`EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF) ${query.toQuery()}`)).rows
    .map((r: Record<string, string>) => r['QUERY PLAN'])
    .join('\n    ');
}

async function main() {
  const database = await startBenchDatabase(55437);
  let servers: Awaited<ReturnType<typeof startBenchServers>> | undefined;
  try {
    const db = database.db;
    const seeding = Date.now();
    await seed(db);
    const seedSeconds = ((Date.now() - seeding) / 1000).toFixed(1);
    const token = await patFor(db);

    servers = await startBenchServers({ Database__Url: database.url });
    const base = servers.full;
    const cursor = await deepCursor(base, token, DEPTH);
    const deepAfter = (JSON.parse(Buffer.from(cursor, 'base64url').toString()) as string[])[0]!;

    const firstUrl = `${base}/api/agents?label=env:prod&limit=50`;
    const deepUrl = `${firstUrl}&cursor=${cursor}`;
    // mirrored order (first, deep, deep, first) so warm-up and drift fall on both alike
    const f1 = await load(firstUrl, token);
    const d1 = await load(deepUrl, token);
    const d2 = await load(deepUrl, token);
    const f2 = await load(firstUrl, token);
    const mean = (a: Figures, b: Figures): Figures => ({
      rps: (a.rps + b.rps) / 2,
      p50: (a.p50 + b.p50) / 2,
      p99: (a.p99 + b.p99) / 2,
      errors: a.errors + b.errors,
    });
    const first = mean(f1, f2);
    const deep = mean(d1, d2);
    const sql = await sqlFigures(db, deepAfter);
    await db.destroy();

    const fmt = (f: Figures) =>
      `${f.rps.toFixed(0).padStart(6)} ${f.p50.toFixed(1).padStart(6)} ${f.p99.toFixed(1).padStart(6)}${f.errors ? `  (${f.errors} errors!)` : ''}`;
    const ms = (t: { p50: number; p99: number }) => `p50 ${t.p50.toFixed(2)} ms, p99 ${t.p99.toFixed(2)} ms`;
    const lines = [
      `Agents list — ${agentCount} agents (60 % env=prod), mean of 2 runs of ${duration}s (after a 2s warm-up each), ${connections} connections, ${os.cpus().length} cores, node ${process.version}; seeded in ${seedSeconds}s`,
      `reproduce: node --import tsx bench/agents-list.ts --duration ${duration} --connections ${connections} --agents ${agentCount}`,
      '',
      'GET /api/agents?label=env:prod&limit=50             req/s p50 ms p99 ms',
      `first page                                        ${fmt(first)}`,
      `page ${DEPTH} rows deep (cursor)                     ${fmt(deep)}`,
      `deep/first p99: ${((deep.p99 / first.p99) * 100).toFixed(0)}%`,
      `runs in order (p99 ms): first ${f1.p99}, deep ${d1.p99}, deep ${d2.p99}, first ${f2.p99}`,
      '',
      'the statements behind one call, sequential, straight on Postgres:',
      `  keyset page, first            ${ms(sql.first)}`,
      `  keyset page, ${DEPTH} deep      ${ms(sql.deep)}`,
      `  count(*) for X-Total-Count    ${ms(sql.count)}`,
      `  count capped at 10,001 rows   ${ms(sql.capped)}`,
      `  planner estimate (EXPLAIN)    ${ms(sql.estimate)}`,
      `  deep page plan:\n    ${sql.pagePlan}`,
      `  count plan:\n    ${sql.countPlan}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await servers?.stop();
    await database.stop();
  }
}

runBench(main);
