/**
 * Platform overhead: an authenticated GET of one resource and of a list page through the
 * full platform, beside a bare Koa route running the same query, in the same run.
 *
 *   npm run bench:platform [-- --duration 10 --connections 32]
 *
 * Real parts: embedded Postgres, the real OIDC issuer (oidc-provider), the servers in one
 * child process and the load generator (autocannon) in this one.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { insertPat } from '../db/repos/pats';
import { ensureTenant } from '../db/repos/tenants';
import { startOidcIssuer } from '../test/support/oidc-issuer';
import { cpuSecondsOfTree, runBench, startBenchDatabase, startBenchServers } from './support';
import { fetchToken, TEST_AUDIENCE } from '../test/support/tokens';

const { values: args } = parseArgs({
  options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '32' } },
});
const duration = Number(args.duration);
const connections = Number(args.connections);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU microseconds per request of the server process and of Postgres. */
  serverCpu: number;
  postgresCpu: number;
}

/** The processes whose CPU time a request costs (throughput alone moves with whatever else runs). */
interface Meters {
  server: () => number;
  postgres: () => number;
}

async function loadOne(meters: Meters, url: string, token?: string): Promise<Figures> {
  const headers = token ? { authorization: `Bearer ${token}` } : undefined;
  await autocannon({ url, connections, duration: 2, headers }); // warm-up
  const [server0, postgres0] = [meters.server(), meters.postgres()];
  const result = await autocannon({ url, connections, duration, headers });
  // The audit rows of reads are written in batches every 200 ms: let the last one land.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const perRequest = (seconds: number) => (seconds * 1e6) / Math.max(1, result.requests.total);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    serverCpu: perRequest(meters.server() - server0),
    postgresCpu: perRequest(meters.postgres() - postgres0),
  };
}

async function main() {
  const database = await startBenchDatabase(55433);
  const issuer = await startOidcIssuer(55434);
  let servers: Awaited<ReturnType<typeof startBenchServers>> | undefined;
  try {
    const db = database.db;
    await ensureTenant(db, 'default');
    const pat = generateToken('svc-pat');
    for (let i = 0; i < 200; i++) {
      const token = i === 0 ? pat : generateToken('svc-pat');
      await insertPat(db, {
        tenant_id: 'default',
        name: `bench-${i}`,
        token_hash: hashToken(token),
        role: 'admin',
        allowed_endpoints: null,
        expires_at: new Date(Date.now() + 86_400_000),
        created_by: 'bench',
      });
    }
    const oidc = await fetchToken(issuer.issuer, 'default.admin');
    servers = await startBenchServers({
      Database__Url: database.url,
      Authentication__Oidc__Authority: issuer.issuer,
      Authentication__Oidc__Audience: TEST_AUDIENCE,
    });
    const { full, bare } = servers;
    const meters: Meters = { server: () => cpuSecondsOfTree(servers!.pid), postgres: database.cpuSeconds };
    const load = (url: string, token?: string) => loadOne(meters, url, token);

    // Each configuration runs twice, in mirrored order (bare, PAT, OIDC, OIDC, PAT, bare),
    // so warm-up, the growing audit table and background work fall on all of them alike.
    const mean = (a: Figures, b: Figures): Figures => ({
      rps: (a.rps + b.rps) / 2,
      p50: (a.p50 + b.p50) / 2,
      p99: (a.p99 + b.p99) / 2,
      errors: a.errors + b.errors,
      serverCpu: (a.serverCpu + b.serverCpu) / 2,
      postgresCpu: (a.postgresCpu + b.postgresCpu) / 2,
    });
    const rows: string[] = [];
    const costs: string[] = [];
    const runs: string[] = [];
    const cpu = (f: Figures) => `${f.serverCpu.toFixed(0).padStart(6)} ${f.postgresCpu.toFixed(0).padStart(9)}`;
    const fmt = (f: Figures) =>
      `${f.rps.toFixed(0).padStart(7)} ${f.p50.toFixed(1).padStart(6)} ${f.p99.toFixed(1).padStart(6)}`;
    for (const [label, path, barePath] of [
      ['single resource  GET /api/tenant', '/api/tenant', '/bare/tenant'],
      ['list page (50)   GET /api/pats  ', '/api/pats?limit=50', '/bare/pats'],
    ] as const) {
      const bare1 = await load(bare + barePath);
      const pat1 = await load(full + path, pat);
      const oidc1 = await load(full + path, oidc);
      const oidc2 = await load(full + path, oidc);
      const pat2 = await load(full + path, pat);
      const bare2 = await load(bare + barePath);
      const baseline = mean(bare1, bare2);
      runs.push(
        `${label.trim()}: bare ${bare1.rps.toFixed(0)}, PAT ${pat1.rps.toFixed(0)}, OIDC ${oidc1.rps.toFixed(0)}, OIDC ${oidc2.rps.toFixed(0)}, PAT ${pat2.rps.toFixed(0)}, bare ${bare2.rps.toFixed(0)} req/s`,
      );
      for (const [auth, measured] of [
        ['PAT ', mean(pat1, pat2)],
        ['OIDC', mean(oidc1, oidc2)],
      ] as const) {
        const ratio = ((measured.rps / baseline.rps) * 100).toFixed(0);
        const errors = measured.errors + baseline.errors;
        rows.push(
          `${label}  ${auth}  ${fmt(measured)}   ${fmt(baseline)}   ${ratio.padStart(4)}%${errors ? `  (${errors} errors!)` : ''}`,
        );
        costs.push(`${label}  ${auth}  ${cpu(measured)}      ${cpu(baseline)}`);
      }
    }
    const lines = [
      `Platform overhead — mean of 2 runs of ${duration}s (after a 2s warm-up each), ${connections} connections, ${os.cpus().length} cores, node ${process.version}`,
      'reproduce: npm run bench:platform -- --duration ' + duration + ' --connections ' + connections,
      '',
      '                                          full platform           bare Koa + same query',
      'route                             auth    req/s p50 ms p99 ms     req/s p50 ms p99 ms   full/bare',
      ...rows,
      '',
      'CPU per request in µs (not the load generator): steadier than req/s when other work shares the cores',
      '                                          full platform           bare Koa + same query',
      'route                             auth    server  postgres        server  postgres',
      ...costs,
      '',
      'runs in order:',
      ...runs.map((run) => `  ${run}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await servers?.stop();
    await issuer.stop();
    await database.stop();
  }
}

runBench(main);
