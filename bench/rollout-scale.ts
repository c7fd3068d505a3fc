/**
 * A rollout at fleet scale: 100,000 agents (by default) in one group, rolled out in 100
 * batches of 1 % and then rolled back, through the real api, the real rollout workflow on
 * the Temporal dev server and a worker process, on embedded Postgres. Measures what the
 * issue asks of the workflow at this size: the time to create and to start (the approved
 * policies judge every target agent), the wall time to `completed` and to `rolled-back`,
 * the time the workflow spends between batches, and the history length over every run
 * (continue-as-new keeps each run bounded).
 *
 * This machine cannot hold 100,000 simulated agents (bench:gateway measures the gateway
 * with 10,000 real ones over mTLS). Here the agents are rows, and a stand-in writes each
 * pushed agent's APPLIED report with the statement the gateway runs for a report, for every
 * agent pushed since the last pass (every 100 ms): the rollout's own work — batches,
 * policies, pushes, waiting, events, history — is all real.
 *
 * Every agent's result is an event, forward and back; the bench fails if one is missing.
 * With `--batch-percent 100` one batch and the rollback each settle every agent at once:
 * `npm run bench:rollout-settle` does it for 20,000 (more events than one statement's
 * parameters would carry) with `--policies off` (the built-in no-prod-big-batch would deny
 * it), the case the test suite keeps at 2,000.
 *
 *   npm run bench:rollout-scale -- [--agents 100000] [--batch-percent 1] [--policies on|off] [--timeout 900]
 */
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { ensureTenant } from '../db/repos/tenants';
import { insertGroup } from '../db/repos/groups';
import { rolloutWorkflowId } from '../workflows/definitions';
import { cpuSecondsOf, runBench, startBenchDatabase } from './support';
import {
  must,
  operatorApi,
  publishVersion,
  pollUntilSettled,
  seconds,
  startRolloutStack,
  workflowHistory,
  type Api,
  type RolloutStack,
} from './rollout';

const { values: args } = parseArgs({
  options: {
    agents: { type: 'string', default: '100000' },
    'batch-percent': { type: 'string', default: '1' },
    // `off`: no policy judges the push (the built-in no-prod-big-batch denies one batch of 100 %).
    policies: { type: 'string', default: 'on' },
    timeout: { type: 'string', default: '900' },
  },
});
const agents = Number(args.agents);
const batchPercent = Number(args['batch-percent']);
const timeoutMs = Number(args.timeout) * 1000;
const TENANT = 'default';

const progress = (text: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);

runBench(async () => {
  if (!(agents >= 1 && batchPercent > 0 && batchPercent <= 100))
    throw new Error('--agents ≥ 1, 0 < --batch-percent ≤ 100');
  const database = await startBenchDatabase(55439);
  let stack: RolloutStack | undefined;
  let reporter: { stop(): Promise<number> } | undefined;
  try {
    const db = database.db;
    const seedStarted = Date.now();
    const groupId = await seedAgents(db);
    progress(`${agents} agents seeded in ${seconds(Date.now() - seedStarted)}`);
    stack = await startRolloutStack(database.url, progress);
    const api = await operatorApi(stack.baseUrl, db);

    // Two versions: every agent has v1 (so a rollback has somewhere to go); the rollout pushes v2.
    const configuration = must(
      'create configuration',
      await api('POST', '/api/configurations', { name: 'scale', format: 'yaml' }),
      201,
    ).body;
    const v1 = await publishVersion(api, configuration.id, 'receivers: {}\n# v1\n');
    await db('agents').where({ group_id: groupId }).update({
      desired_configuration_id: configuration.id,
      desired_version: v1.version,
      desired_hash: v1.hash,
      applied_configuration_id: configuration.id,
      applied_version: v1.version,
      applied_hash: v1.hash,
      applied_status: 'APPLIED',
    });
    const v2 = await publishVersion(api, configuration.id, 'receivers: {}\n# v2\n');
    const policies = args.policies === 'off' ? [] : await enableBuiltinPolicies(api);
    reporter = startStandInReports(db, groupId);

    const created = must(
      'create rollout',
      await api('POST', '/api/rollouts', {
        configurationId: configuration.id,
        version: v2.version,
        target: { groupIds: [groupId] },
        strategy: { batchPercent },
      }),
      201,
    );
    const id = created.body.id as string;
    progress(`rollout ${id}: ${created.body.progress.total} agents, created in ${created.ms.toFixed(0)} ms; starting`);
    const cpu0 = cpus(stack);
    const writes0 = await tableWrites(db, STATS_FLUSH_MS); // after the seeding's statistics are in
    const started = Date.now();
    const start = must('start', await api('POST', `/api/rollouts/${id}/start`), 200);
    const completed = await pollUntilSettled(api, id, started, { timeoutMs, progress });
    const completedMs = Date.now() - started;
    const cpu1 = cpus(stack);
    if (completed.state !== 'completed') throw new Error(`rollout ended ${completed.state}: ${completed.reason}`);
    progress(`completed after ${seconds(completedMs)}; rolling back`);
    const gaps = await batchGaps(db, id);
    const forward = await workflowHistory(stack.temporal.client, id);
    const forwardBytes = await historyBytes(stack.temporal.client, id);
    const writes1 = await tableWrites(db, STATS_FLUSH_MS);

    const rollbackStarted = Date.now();
    const rollback = must('rollback', await api('POST', `/api/rollouts/${id}/rollback`), 200);
    const rolledBack = await pollUntilSettled(api, id, rollbackStarted, { timeoutMs, progress });
    const rollbackMs = Date.now() - rollbackStarted;
    const total = await workflowHistory(stack.temporal.client, id);
    const totalBytes = await historyBytes(stack.temporal.client, id);
    const onV1 = await count(
      db('agents').where({ group_id: groupId, applied_hash: v1.hash, applied_status: 'APPLIED' }),
    );
    const timeline = await rollbackTimeline(db, id);
    const reports = await reporter.stop();
    reporter = undefined;
    const agentEvents = await count(
      db('events').where({ type: 'rollout.agent-updated' }).whereRaw("data->>'rolloutId' = ?", [id]),
    );
    if (agentEvents !== 2 * agents)
      throw new Error(
        `${agentEvents} rollout.agent-updated events; expected one per agent and direction (${2 * agents})`,
      );

    const writes2 = await tableWrites(db, STATS_FLUSH_MS);
    const sizes = await tableSizes(db);

    const p = completed.progress;
    const used = (key: keyof ReturnType<typeof cpus>) => (cpu1[key] - cpu0[key]).toFixed(1);
    const lines = [
      `rollout of one version to ${agents} agents in batches of ${batchPercent} % (bakeSeconds 0), ${policies.length ? `${policies.length} approved policies (${policies.join(', ')})` : 'no policies'}:`,
      `  create (target: one group) answered in ${created.ms.toFixed(0)} ms; start (policies judge every agent) in ${start.ms.toFixed(0)} ms`,
      `  completed ${seconds(completedMs)} after the start call; ${gaps.batches} batches; succeeded ${p.succeeded}, failed ${p.failed}, skipped ${p.skipped} of ${p.total}`,
      `  between batches (last report of one → push of the next): median ${gaps.median} ms, p90 ${gaps.p90} ms, max ${gaps.max} ms`,
      `  CPU s until completed: worker ${used('worker')}, temporal ${used('temporal')}, postgres ${used('postgres')}, api + stand-in ${used('bench')}`,
      `  history until completed: ${forward.events} events in ${forward.runs.length} run(s) (${forward.runs.join(', ')})`,
      `  rollback answered in ${rollback.ms.toFixed(0)} ms; ${rolledBack.state} ${seconds(rollbackMs)} later; ${onV1} agents APPLIED the previous version again`,
      `  rollback timeline from rolling-back (its events' transaction times): first results +${timeline.firstResults} s, last +${timeline.lastResults} s, rolled-back +${timeline.rolledBack} s`,
      `  history in all: ${total.events} events in ${total.runs.length} run(s) (${total.runs.join(', ')}); stand-in reports written: ${reports}`,
      `  rollout.agent-updated events: ${agentEvents} (one per agent, forward and back)`,
      `  Temporal history bytes: until completed ${forwardBytes}, in all ${totalBytes}`,
      `  rows written per target agent (insert/update/delete; stand-in reports included), forward: ${perAgent(writes0, writes1)}`,
      `    rollback: ${perAgent(writes1, writes2)}`,
      `  tables after both (rows, bytes per row with indexes and TOAST as left and compacted): ${sizes}`,
      `  reproduce: npm run bench:rollout-scale -- --agents ${agents} --batch-percent ${batchPercent} --policies ${args.policies}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await reporter?.stop().catch(() => {});
    await stack?.stop();
    await database.stop();
  }
});

// ---------------------------------------------------------------------------------------

/** `agents` online rows labelled env=prod in one new group (in chunks of 10,000). */
async function seedAgents(db: Knex): Promise<string> {
  await ensureTenant(db, TENANT);
  const group = await insertGroup(db, TENANT, { name: 'scale', description: '', labels: {} });
  for (let from = 1; from <= agents; from += 10_000) {
    await db.raw(
      `INSERT INTO agents (id, tenant_id, group_id, name, labels, status, last_seen_at)
       SELECT gen_random_uuid(), ?, ?, 'agent-' || i, '{"env":"prod"}', 'online', now()
         FROM generate_series(?::int, ?::int) AS i`,
      [TENANT, group.id, from, Math.min(agents, from + 9_999)],
    );
  }
  await db.raw('ANALYZE agents');
  return group.id;
}

/** The built-in policies (approved, created disabled) switched on: the start evaluates each for every agent. */
async function enableBuiltinPolicies(api: Api): Promise<string[]> {
  const listed = must('list policies', await api('GET', '/api/policies?limit=100'), 200).body.items as Array<{
    id: string;
    name: string;
    builtin: boolean;
  }>;
  const names: string[] = [];
  for (const policy of listed.filter((p) => p.builtin)) {
    const current = must('get policy', await api('GET', `/api/policies/${policy.id}`), 200);
    must(
      'enable policy',
      await api('POST', `/api/policies/${policy.id}/enable`, undefined, { 'if-match': current.etag! }),
      200,
    );
    names.push(policy.name);
  }
  return names;
}

/**
 * Stands in for the agents' APPLIED reports: every 100 ms, each agent whose desired
 * configuration differs from what it reported applies it (the columns a report writes).
 */
function startStandInReports(db: Knex, groupId: string): { stop(): Promise<number> } {
  let running = true;
  let written = 0;
  const loop = (async () => {
    while (running) {
      const result = await db.raw(
        `UPDATE agents SET applied_hash = desired_hash, applied_status = 'APPLIED', applied_error = NULL,
                applied_configuration_id = desired_configuration_id, applied_version = desired_version, last_seen_at = now()
          WHERE tenant_id = ? AND group_id = ? AND desired_hash IS NOT NULL AND applied_hash IS DISTINCT FROM desired_hash`,
        [TENANT, groupId],
      );
      written += result.rowCount ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return written;
    },
  };
}

/** Per batch boundary, the workflow's own time: last report of a batch → first push of the next. */
async function batchGaps(
  db: Knex,
  rolloutId: string,
): Promise<{ batches: number; median: number; p90: number; max: number }> {
  const rows = await db('rollout_agents')
    .where({ rollout_id: rolloutId })
    .whereNotNull('batch')
    .groupBy('batch')
    .orderBy('batch')
    .select<Array<{ pushed: Date; finished: Date }>>(
      'batch',
      db.raw('min(pushed_at) as pushed'),
      db.raw('max(finished_at) as finished'),
    );
  const gaps = rows
    .slice(1)
    .map((row, i) => row.pushed.getTime() - rows[i]!.finished.getTime())
    .sort((a, b) => a - b);
  const at = (q: number) => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))] ?? 0;
  return { batches: rows.length, median: at(0.5), p90: at(0.9), max: gaps.at(-1) ?? 0 };
}

function cpus(stack: RolloutStack) {
  const own = process.cpuUsage();
  return {
    worker: cpuSecondsOf({ pid: stack.workerPid }),
    temporal: cpuSecondsOf({ pid: stack.temporalPid }),
    postgres: cpuSecondsOf({ name: 'postgres' }),
    bench: (own.user + own.system) / 1e6,
  };
}

/**
 * Cumulative statistics are flushed by each backend at most once a second, and by an idle one
 * after 10 s: a read that follows the work waits this long so it sees all of it (and none of
 * the work before it is counted in the next).
 */
const STATS_FLUSH_MS = 11_000;
const TABLES = ['agents', 'rollout_agents', 'agent_history', 'events', 'rollouts', 'audit_events'];

/** Rows inserted, updated (HOT among them) and deleted per table so far, and the WAL position. */
async function tableWrites(db: Knex, waitMs = 0) {
  if (waitMs) await new Promise((resolve) => setTimeout(resolve, waitMs));
  const { rows } = await db.raw(
    `SELECT relname, n_tup_ins::bigint AS ins, n_tup_upd::bigint AS upd, n_tup_hot_upd::bigint AS hot, n_tup_del::bigint AS del
       FROM pg_stat_user_tables WHERE relname = ANY(?)`,
    [TABLES],
  );
  const wal = (await db.raw("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS bytes")).rows[0].bytes;
  const tables = new Map<string, Record<'ins' | 'upd' | 'hot' | 'del', number>>();
  for (const row of rows as Array<Record<string, string>>)
    tables.set(row.relname!, {
      ins: Number(row.ins),
      upd: Number(row.upd),
      hot: Number(row.hot),
      del: Number(row.del),
    });
  return { tables, wal: Number(wal) };
}

/** What was written between two reads, per target agent: rows per table and WAL bytes. */
function perAgent(before: Awaited<ReturnType<typeof tableWrites>>, after: Awaited<ReturnType<typeof tableWrites>>) {
  const per = (n: number) => (n / agents).toFixed(2);
  const parts = TABLES.flatMap((table) => {
    const [a, b] = [before.tables.get(table), after.tables.get(table)];
    if (!a || !b) return [];
    const [ins, upd, hot, del] = [b.ins - a.ins, b.upd - a.upd, b.hot - a.hot, b.del - a.del];
    if (ins + upd + del === 0) return [];
    return [`${table} +${per(ins)} ~${per(upd)} (HOT ${per(hot)})${del ? ` -${per(del)}` : ''}`];
  });
  return `${parts.join(', ')}; WAL ${((after.wal - before.wal) / agents).toFixed(0)} B`;
}

/**
 * Each table's rows and its total size (heap, indexes, TOAST) per row: as the run left it
 * (dead rows of its updates not yet vacuumed), and compacted (VACUUM FULL: live rows only).
 */
async function tableSizes(db: Knex): Promise<string> {
  const perRow = async (table: string) => {
    const { rows } = await db.raw(
      `SELECT count(*)::bigint AS n, pg_total_relation_size(?::regclass) AS bytes FROM ${table}`,
      [table],
    );
    const n = Number(rows[0].n);
    return { n, bytes: n ? (Number(rows[0].bytes) / n).toFixed(0) : '-' };
  };
  const parts: string[] = [];
  for (const table of TABLES) {
    const left = await perRow(table);
    await db.raw(`VACUUM FULL ${table}`);
    const compacted = await perRow(table);
    parts.push(`${table} ${left.n} (${left.bytes} B, compacted ${compacted.bytes} B)`);
  }
  return parts.join(', ');
}

/** The Temporal history of every run of `rollout:<id>`, in bytes (as the server counts them). */
async function historyBytes(client: RolloutStack['temporal']['client'], rolloutId: string): Promise<number> {
  let bytes = 0;
  for await (const run of client.workflow.list({ query: `WorkflowId = "${rolloutWorkflowId(rolloutId)}"` }))
    bytes += run.historySize ?? 0;
  return bytes;
}

async function count(query: Knex.QueryBuilder): Promise<number> {
  return Number(((await query.count({ n: '*' }).first()) as { n: string }).n);
}

/**
 * Where a rollback's time goes, from its events: when its first and last agents' results
 * were written and when it ended, in seconds after `rollout.rolling-back` (each event's time
 * is its transaction's start).
 */
async function rollbackTimeline(db: Knex, id: string) {
  const { rows } = await db.raw(
    `SELECT min(time) FILTER (WHERE type = 'rollout.rolling-back') AS start,
            min(time) FILTER (WHERE type = 'rollout.agent-updated' AND data->>'rollback' = 'true') AS first,
            max(time) FILTER (WHERE type = 'rollout.agent-updated' AND data->>'rollback' = 'true') AS last,
            min(time) FILTER (WHERE type = 'rollout.rolled-back') AS end
       FROM events WHERE data->>'rolloutId' = ?`,
    [id],
  );
  const times = rows[0] as Record<'start' | 'first' | 'last' | 'end', Date | null>;
  const after = (at: Date | null) => (((at?.getTime() ?? NaN) - (times.start?.getTime() ?? NaN)) / 1000).toFixed(1);
  return { firstResults: after(times.first), lastResults: after(times.last), rolledBack: after(times.end) };
}
