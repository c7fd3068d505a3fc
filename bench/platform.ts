/**
 * Platform overhead: an authenticated GET of one resource and of a list page through the
 * full platform, beside a bare Koa route running the same query, in the same run.
 *
 *   npm run bench:platform [-- --duration 3 --rounds 8 --connections 32]
 *
 * Real parts: embedded Postgres, the real OIDC issuer (oidc-provider), the servers in one
 * child process (the compiled code, as the image runs it) and the load generator
 * (autocannon) in this one. This machine's speed drifts by 10–20 % over a minute, so each
 * configuration runs in several short rounds, in mirrored order (bare, PAT, OIDC, then
 * OIDC, PAT, bare, …), and its figures are the mean of its rounds: drift falls on all three
 * alike.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { generateToken, hashToken } from '../domain/tokens/secret-token';
import { insertPat } from '../db/repos/pats';
import { ensureTenant } from '../db/repos/tenants';
import { startOidcIssuer } from '../scripts/infra/oidc-issuer';
import { cpuSecondsOfTree, runBench, startBenchDatabase, startBenchServers } from './support';
import { fetchToken, TEST_AUDIENCE } from '../scripts/infra/oidc-tokens';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '32' },
  },
});
const duration = Number(args.duration);
const rounds = Number(args.rounds);
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

async function loadOne(meters: Meters, url: string, token: string | undefined, warmUp: boolean): Promise<Figures> {
  const headers = token ? { authorization: `Bearer ${token}` } : undefined;
  if (warmUp) await autocannon({ url, connections, duration: 2, headers });
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
    const mean = (all: Figures[]): Figures => {
      const average = (pick: (f: Figures) => number) => all.reduce((sum, f) => sum + pick(f), 0) / all.length;
      return {
        rps: average((f) => f.rps),
        p50: average((f) => f.p50),
        p99: average((f) => f.p99),
        errors: all.reduce((sum, f) => sum + f.errors, 0),
        serverCpu: average((f) => f.serverCpu),
        postgresCpu: average((f) => f.postgresCpu),
      };
    };
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
      const configurations = [
        { name: 'bare', url: bare + barePath, token: undefined, figures: [] as Figures[] },
        { name: 'PAT', url: full + path, token: pat, figures: [] as Figures[] },
        { name: 'OIDC', url: full + path, token: oidc, figures: [] as Figures[] },
      ];
      const order: string[] = [];
      for (let round = 0; round < rounds; round += 1) {
        // Mirrored rounds (bare, PAT, OIDC, then OIDC, PAT, bare): the growing audit table
        // and background work fall on all of them alike.
        const inRound = round % 2 === 0 ? configurations : [...configurations].reverse();
        for (const configuration of inRound) {
          const figures = await loadOne(meters, configuration.url, configuration.token, round === 0);
          configuration.figures.push(figures);
          order.push(`${configuration.name} ${figures.rps.toFixed(0)}`);
        }
      }
      runs.push(`${label.trim()}: ${order.join(', ')} req/s`);
      const [baseline, ...measured] = configurations.map((configuration) => mean(configuration.figures));
      for (const [auth, figures] of [
        ['PAT ', measured[0]!],
        ['OIDC', measured[1]!],
      ] as const) {
        const ratio = ((figures.rps / baseline!.rps) * 100).toFixed(0);
        const errors = figures.errors + baseline!.errors;
        rows.push(
          `${label}  ${auth}  ${fmt(figures)}   ${fmt(baseline!)}   ${ratio.padStart(4)}%${errors ? `  (${errors} errors!)` : ''}`,
        );
        costs.push(`${label}  ${auth}  ${cpu(figures)}      ${cpu(baseline!)}`);
      }
    }
    const lines = [
      `Platform overhead — mean of ${rounds} rounds of ${duration}s each (after a 2s warm-up in the first), ${connections} connections, ${os.cpus().length} cores, node ${process.version}`,
      `reproduce: npm run bench:platform -- --duration ${duration} --rounds ${rounds} --connections ${connections}`,
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
