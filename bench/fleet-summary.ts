/**
 * What the overview costs at fleet size: the statements behind `GET /api/fleet/summary`
 * (agents by status and health; by desired configuration and version) and
 * `GET /api/fleet/online` (a day of the census in 5-minute intervals, from a week of
 * counts), and the census's own count, which the worker runs once a minute, over 100,000
 * agents of one tenant (20 configurations of 3 versions, health and applies mixed). Timed
 * on embedded Postgres, straight (the routes add a JSON body of a few KB).
 *
 *   npm run bench:fleet-summary -- [--agents 100000] [--runs 30]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { insertAgents, type NewAgent } from '../db/repos/agents';
import { agentCounts, configurationSpread, fleetIntervals, recordFleetMinute } from '../db/repos/fleet';
import { ensureDefaultGroup } from '../db/repos/groups';
import { ensureTenant } from '../db/repos/tenants';
import { runBench, startBenchDatabase } from './support';

const { values: args } = parseArgs({
  options: { agents: { type: 'string', default: '100000' }, runs: { type: 'string', default: '30' } },
});
const agentCount = Number(args.agents);
const runs = Number(args.runs);
const TENANT = 'default';
const STATUSES = ['online', 'online', 'online', 'offline', 'pending-approval'] as const;

async function seed(db: Knex): Promise<void> {
  await ensureTenant(db, TENANT);
  const groupId = (await ensureDefaultGroup(db, TENANT)).id;
  const configurations: string[] = [];
  for (let c = 0; c < 20; c++) {
    const [row] = await db('configurations')
      .insert({ tenant_id: TENANT, name: `collector-${c}`, format: 'yaml', latest_version: 3, published_version: 3 })
      .returning('id');
    configurations.push(row.id);
  }
  for (let start = 0; start < agentCount; start += 10_000) {
    const agents: NewAgent[] = [];
    for (let i = start; i < Math.min(agentCount, start + 10_000); i++) {
      const version = (i % 3) + 1;
      agents.push({
        id: randomUUID(),
        tenant_id: TENANT,
        group_id: groupId,
        name: `collector-${i}`,
        status: STATUSES[i % STATUSES.length],
        desired_configuration_id: configurations[i % 20],
        desired_version: version,
        desired_hash: `hash-${i % 20}-${version}`,
        applied_hash: `hash-${i % 20}-${version}`,
        applied_status: i % 50 === 0 ? 'FAILED' : 'APPLIED',
        health: i % 7 === 0 ? null : { healthy: i % 40 !== 0 },
      });
    }
    await insertAgents(db, agents);
  }
  await db('agents').whereRaw("(health->>'healthy')::boolean = false").update({ unhealthy_since: db.fn.now() });
  // A week of the census, one count a minute.
  const minutes = Array.from({ length: 7 * 1440 }, (_, i) => ({
    tenant_id: TENANT,
    minute: new Date(Math.floor(Date.now() / 60_000 - 7 * 1440 + i) * 60_000),
    online: 60_000 + (i % 100),
    unhealthy: i % 10,
    enrolled: agentCount,
  }));
  for (let i = 0; i < minutes.length; i += 2_000) await db('fleet_minutes').insert(minutes.slice(i, i + 2_000));
  await db.raw('VACUUM ANALYZE agents');
  await db.raw('VACUUM ANALYZE fleet_minutes');
}

async function timed(label: string, run: () => Promise<unknown>): Promise<string> {
  await run(); // warm
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    await run();
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(1);
  return `  ${label}: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (${runs} runs)`;
}

runBench(async () => {
  const database = await startBenchDatabase(55441);
  try {
    const db = database.db;
    const seeded = Date.now();
    await seed(db);
    process.stderr.write(
      `${agentCount} agents and a week of counts seeded in ${((Date.now() - seeded) / 1000).toFixed(1)} s\n`,
    );
    const day = new Date(Date.now() - 86_400_000);
    const lines = [
      `the overview over ${agentCount} agents of one tenant (20 configurations × 3 versions):`,
      await timed('agents by status and health (agentCounts)', () => agentCounts(db, TENANT)),
      await timed('agents by configuration and version (configurationSpread)', () =>
        configurationSpread(db, TENANT, 10),
      ),
      await timed('a day of the census in 5-minute intervals (fleetIntervals)', () =>
        fleetIntervals(db, TENANT, day, 5),
      ),
      await timed("the census's count of every tenant (recordFleetMinute, once a minute)", () => recordFleetMinute(db)),
      `  reproduce: npm run bench:fleet-summary -- --agents ${agentCount} --runs ${runs}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await database.stop();
  }
});
