/**
 * The audit trail's cost and its filters' speed, on a disposable embedded Postgres.
 *
 *   npm run bench:audit [-- --rows 200000 --batch 500]
 *
 * Append: blocks of batches written alternately as links (appendAuditCalls: one
 * audit_append_calls call per tenant, the calls as JSON text; how the trail writes reads
 * and refused calls) and as rows of their own (insertAudit: audit_append_chain, one array
 * per column; how a write records its call); each figure is the CPU per call of every
 * Postgres process and of this one (which also makes up the calls, alike for both),
 * summed over its blocks, so both meet the same table size. The calls look like the API's (a few tenants, 50 actors, 1,000 resources).
 * Filters: a page of 50 and the count, as GET /api/audit/events asks them, for common and
 * rare values, over everything appended.
 */
import { parseArgs } from 'node:util';
import {
  appendAuditCalls,
  fewRowsList,
  insertAudit,
  listAuditQuery,
  verifyAuditChain,
  type AuditFilters,
  type AuditRecord,
} from '../db/repos/audit';
import { freePort, runBench, startBenchDatabase } from './support';

const { values: args } = parseArgs({
  options: { rows: { type: 'string', default: '200000' }, batch: { type: 'string', default: '500' } },
});
const totalRows = Number(args.rows);
const batchSize = Number(args.batch);
const BLOCKS = 8;

function recordOf(n: number): AuditRecord {
  return {
    tenant_id: n % 20 === 0 ? 'acme' : 'default',
    occurred_at: new Date(),
    actor_type: 'pat',
    actor: `actor-${n % 50}`,
    actor_id: '6f1c1c52-3a0e-4a57-9c1e-9d7cf3a3c1aa',
    method: n % 10 === 0 ? 'PUT' : 'GET',
    path: `/api/groups/${n % 1000}`,
    route: '/api/groups/{id}',
    status: 200,
    resource_type: 'group',
    resource_id: String(n % 1000),
    request_id: `bench-${n}`,
    source_address: '127.0.0.1',
  };
}

async function main() {
  const database = await startBenchDatabase(await freePort());
  try {
    const db = database.db;
    const writers = {
      'links (appendAuditCalls)': (batch: AuditRecord[]) => appendAuditCalls(db, batch),
      'rows (insertAudit)': (batch: AuditRecord[]) => insertAudit(db, batch),
    };
    const cost = new Map<string, { cpu: number; node: number; ms: number; rows: number; bytes: number }>();
    /** The table's size with its indexes and TOAST: what a call adds to the disk. */
    const tableBytes = async () =>
      Number((await db.raw("SELECT pg_total_relation_size('audit_events') AS n")).rows[0].n);
    let n = 0;
    const rowsPerBlock = Math.ceil(totalRows / (BLOCKS * Object.keys(writers).length));
    for (let block = 0; block < BLOCKS; block++) {
      for (const [name, write] of Object.entries(writers)) {
        const [cpu0, t0, own0, bytes0] = [database.cpuSeconds(), Date.now(), process.cpuUsage(), await tableBytes()];
        for (let written = 0; written < rowsPerBlock; written += batchSize) {
          await write(Array.from({ length: batchSize }, () => recordOf(n++)));
        }
        const own = process.cpuUsage(own0);
        const node = (own.user + own.system) / 1e6;
        const bytes = (await tableBytes()) - bytes0;
        const sum = cost.get(name) ?? { cpu: 0, node: 0, ms: 0, rows: 0, bytes: 0 };
        cost.set(name, {
          cpu: sum.cpu + database.cpuSeconds() - cpu0,
          node: sum.node + node,
          ms: sum.ms + Date.now() - t0,
          rows: sum.rows + rowsPerBlock,
          bytes: sum.bytes + bytes,
        });
      }
    }
    const verdicts = await Promise.all(['default', 'acme'].map((chain) => verifyAuditChain(db, chain)));
    // Autovacuum keeps a busy table's statistics and GIN pending list up to date.
    await db.raw('VACUUM ANALYZE audit_events');

    const lines = [
      `Audit trail — ${n.toLocaleString('en')} rows appended in batches of ${batchSize}, ${BLOCKS} alternating blocks per writer`,
      `reproduce: npm run bench:audit -- --rows ${totalRows} --batch ${batchSize}`,
      '',
      'append                     µs per call: Postgres CPU   this process   wall   bytes on disk per call',
      ...[...cost].map(([name, c]) => {
        const perCall = (seconds: number) => ((seconds * 1e6) / c.rows).toFixed(1);
        return `${name.padEnd(36)} ${perCall(c.cpu).padStart(8)} ${perCall(c.node).padStart(14)} ${perCall(c.ms / 1e3).padStart(14)} ${(c.bytes / c.rows).toFixed(0).padStart(8)}`;
      }),
      `chains verify: ${verdicts.every((v) => v.valid) ? 'yes' : 'no'} (${verdicts.reduce((sum, v) => sum + v.checked, 0)} calls)`,
      '',
      'filter (tenant default)              page of 50 ms   count ms',
    ];
    const filters: Record<string, AuditFilters> = {
      none: {},
      'actor, common': { actor: 'actor-7' },
      'actor, absent': { actor: 'nobody' },
      'resource, 1 in 1,000': { resourceType: 'group', resourceId: '42' },
      'resource, absent': { resourceType: 'rollout', resourceId: 'none' },
      requestId: { requestId: `bench-${Math.floor(n / 2) + 1}` },
      'method PUT': { method: 'PUT' },
    };
    for (const [name, filter] of Object.entries(filters)) {
      const timed = async (run: () => Promise<unknown>) => {
        await run();
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < 5; i++) await run();
        return Number(process.hrtime.bigint() - t0) / 5e6;
      };
      // As the route asks: whether few rows list the value (timed with each query), then the query.
      const query = (fewRows: boolean) => listAuditQuery(db, 'default', filter, fewRows);
      const page = await timed(async () =>
        query(await fewRowsList(db, 'default', filter))
          .orderBy([
            { column: 'link_seq', order: 'desc' },
            { column: 'seq', order: 'desc' },
          ])
          .limit(51),
      );
      const count = await timed(async () =>
        query(await fewRowsList(db, 'default', filter))
          .clearSelect()
          .count({ n: '*' })
          .first(),
      );
      lines.push(`${name.padEnd(36)} ${page.toFixed(1).padStart(8)}        ${count.toFixed(1).padStart(8)}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await database.stop();
  }
}

runBench(main);
