/**
 * npm run bench:git-webhook — from a webhook's 202 to its sync run, over real parts: embedded
 * Postgres, the Temporal dev server, a worker process, the api, and a bare repository on
 * disk (file://) that git pushes to. For each of `--pushes` commits: push, deliver the
 * webhook, then read GET /api/git-sources/{id}/sync-runs every `--poll-ms` until the run
 * with the pushed SHA is there (visible) and until it has finished. The source polls once a
 * day, so every run is the webhook's. Prints p50, p99 and max of the 202 itself, of
 * visible and of finished (the goal: visible p50 under 150 ms, p99 under 500 ms).
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { ensureTenant } from '../db/repos/tenants';
import { createTestRepository } from '../scripts/infra/git';
import { freePort, runBench, startBenchDatabase } from './support';
import { must, operatorApi, startRolloutStack, type Api } from './rollout';

const { values: args } = parseArgs({
  options: {
    pushes: { type: 'string', default: '100' },
    'poll-ms': { type: 'string', default: '10' },
  },
});
const pushes = Number(args.pushes);
const pollMs = Number(args['poll-ms']);

const progress = (text: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);

interface Run {
  commitSha: string | null;
  status: string;
  trigger: string;
}

/** Polls the source's newest run until `done` says so; the time it took, in ms. */
async function waitForRun(api: Api, sourceId: string, done: (run: Run) => boolean, from: number): Promise<number> {
  for (;;) {
    const reply = must('sync-runs', await api('GET', `/api/git-sources/${sourceId}/sync-runs?limit=1`), 200);
    const run = reply.body.items[0] as Run | undefined;
    if (run && done(run)) return performance.now() - from;
    if (performance.now() - from > 30_000) throw new Error(`no such run after 30 s: ${JSON.stringify(run)}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const summary = (name: string, values: number[]) =>
  `${name.padEnd(10)} p50 ${percentile(values, 50).toFixed(0)} ms, p99 ${percentile(values, 99).toFixed(0)} ms, max ${Math.max(...values).toFixed(0)} ms`;

runBench(async () => {
  const database = await startBenchDatabase(await freePort());
  const stack = await startRolloutStack(database.url, progress);
  const repository = await createTestRepository();
  try {
    await ensureTenant(database.db, 'default');
    const api = await operatorApi(stack.baseUrl, database.db);
    const first = await repository.commit({ 'configs/collector.yaml': 'push: 0\n' });
    const source = must(
      'create source',
      await api('POST', '/api/git-sources', {
        name: `bench-${randomBytes(3).toString('hex')}`,
        repoUrl: repository.url,
        branch: 'main',
        path: 'configs',
        pollIntervalSeconds: 86_400,
        autoPublish: true,
      }),
      201,
    ).body;
    const admin = await operatorApi(stack.baseUrl, database.db, 'admin'); // webhook secrets are an admin's
    const token = must('webhook token', await admin('POST', `/api/git-sources/${source.id}/webhook-token`), 201).body
      .token as string;
    await waitForRun(api, source.id, (run) => run.commitSha === first && run.status !== 'running', performance.now());
    progress(`source ${source.id} synced its first commit; ${pushes} pushes follow`);

    const answered: number[] = [];
    const visible: number[] = [];
    const finished: number[] = [];
    for (let i = 1; i <= pushes; i++) {
      const sha = await repository.commit({ 'configs/collector.yaml': `push: ${i}\n` });
      const sent = performance.now();
      const reply = await fetch(`${stack.baseUrl}/api/git/webhook/${source.id}`, {
        method: 'POST',
        headers: { 'x-service-webhook-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ ref: 'refs/heads/main', after: sha }),
      });
      await reply.text();
      if (reply.status !== 202) throw new Error(`webhook answered ${reply.status}`);
      const at202 = performance.now();
      answered.push(at202 - sent);
      visible.push(await waitForRun(api, source.id, (run) => run.commitSha === sha, at202));
      finished.push(
        await waitForRun(api, source.id, (run) => run.commitSha === sha && run.status !== 'running', at202),
      );
      if (i % 20 === 0) progress(`${i} pushes`);
    }
    const runs = must('sync-runs', await api('GET', `/api/git-sources/${source.id}/sync-runs?limit=1000`), 200).body
      .items as Run[];
    const byWebhook = runs.filter((run) => run.trigger === 'webhook' && run.status === 'succeeded').length;
    console.log(`git webhook → sync run, ${pushes} pushes (one file each), polling the API every ${pollMs} ms`);
    console.log(summary('202', answered));
    console.log(summary('visible', visible));
    console.log(summary('finished', finished));
    console.log(`runs by webhook, succeeded: ${byWebhook} of ${pushes}`);
  } finally {
    await repository.remove();
    await stack.stop();
    await database.stop();
  }
});
