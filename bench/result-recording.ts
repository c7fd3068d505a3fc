/**
 * What recording agents' results costs in Postgres: one statement of N history entries
 * (`recordRolloutHistory`), forward and a rollback's, beside one statement of N
 * `rollout.agent-updated` events (`emitEvents`) — what every batch, and a rollback settling a
 * whole fleet at once, writes. Three rounds each, on an embedded Postgres of its own.
 *
 * The rollout row it records against is written without its configuration (foreign keys
 * off for this session, `session_replication_role = replica`): it measures the inserts only.
 *
 *   npm run bench:result-recording -- [--agents 20000]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { recordRolloutHistory } from '../db/repos/agent-history';
import { emitEvents } from '../db/repos/events';
import { ensureTenant } from '../db/repos/tenants';
import { freePort, runBench, startBenchDatabase } from './support';

const { values } = parseArgs({ options: { agents: { type: 'string', default: '20000' } } });
const agents = Number(values.agents);

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

runBench(async () => {
  if (!(Number.isInteger(agents) && agents > 0 && agents <= 1_000_000)) throw new Error('--agents must be 1..1000000');
  const bench = await startBenchDatabase(await freePort());
  const db = bench.db;
  try {
    await ensureTenant(db, 'default');
    const ids = Array.from({ length: agents }, () => randomUUID());
    const rolloutId = randomUUID();
    await db.transaction(async (trx) => {
      await trx.raw('SET LOCAL session_replication_role = replica');
      await trx.raw(
        `INSERT INTO rollouts (id, tenant_id, configuration_id, version, content_hash, target, strategy, state, created_by)
         VALUES (?, 'default', ?, 1, 'h', '{}', '{}', 'running', 'bench')`,
        [rolloutId, randomUUID()],
      );
    });
    const previous = { configurationId: randomUUID(), version: 1, hash: 'p' };
    process.stdout.write(`recording the results of ${agents} agents in one statement each:\n`);
    for (let round = 1; round <= 3; round++) {
      for (const rollback of [false, true]) {
        const history = await timed(() =>
          recordRolloutHistory(
            db,
            rolloutId,
            ids.map((agentId) => ({
              agentId,
              kind: rollback ? 'rollback-applied' : 'applied',
              detail: null,
              batch: rollback ? null : 1,
              rollback,
              version: rollback ? previous : undefined,
            })),
          ),
        );
        const events = await timed(() =>
          emitEvents(
            db,
            ids.map((agentId) => ({
              tenantId: 'default',
              type: 'rollout.agent-updated',
              source: `/api/rollouts/${rolloutId}`,
              subject: agentId,
              data: { rolloutId, rolloutName: null, agentId, state: 'succeeded', error: null, batch: 1 },
            })),
          ),
        );
        process.stdout.write(
          `  round ${round}, ${rollback ? 'rollback' : 'forward '}: history ${history.toFixed(0)} ms, events ${events.toFixed(0)} ms\n`,
        );
      }
    }
    process.stdout.write(`  reproduce: npm run bench:result-recording -- --agents ${agents}\n`);
  } finally {
    await bench.stop();
  }
});
