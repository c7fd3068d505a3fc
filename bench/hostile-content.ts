/**
 * npm run bench:hostile-content — what uploads built to cost the parser do to an api replica.
 *
 * One replica (bench/api-server.ts, its own process, with the image's runtime:
 * bench/image-runtime.ts) on an embedded Postgres. For each shape, `--concurrency` uploads
 * of it run at once, `--rounds` times, while one client asks `GET /healthz` back to back and
 * the replica's RSS is read from /proc every 20 ms. Printed per shape: the uploads' statuses
 * and durations, /healthz p50, p99 and max, and the replica's peak RSS.
 *
 * Shapes: the hostile ones (600 KB of nested `[`, 300,000 compact `- `, 90,000 aliases, a
 * million `[` of JSON), which the scan refuses before any parse, and an honest heavy one
 * (an 800 KB map of 40,000 keys), which is parsed, on the parsing threads.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { imageRuntime } from './image-runtime';
import { benchPat, freePort, residentBytesOf, runBench, startApiProcess, startBenchDatabase } from './support';

const { values: args } = parseArgs({
  options: {
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
  },
});
const concurrency = Number(args.concurrency);
const rounds = Number(args.rounds);

const lines = (count: number, line: (i: number) => string) =>
  Array.from({ length: count }, (_, i) => line(i)).join('\n');

const SHAPES: Array<{ name: string; format: 'yaml' | 'json'; content: string }> = [
  { name: '600 KB of nested [', format: 'yaml', content: '['.repeat(600_000) },
  { name: '300,000 compact "- "', format: 'yaml', content: `${'- '.repeat(300_000)}x` },
  { name: '90,000 aliases', format: 'yaml', content: `a: &a x\n${lines(90_000, (i) => `k${i}: *a`)}` },
  { name: 'a million [ of JSON', format: 'json', content: '['.repeat(1_000_000) },
  { name: 'honest: 40,000 keys, 800 KB', format: 'yaml', content: lines(40_000, (i) => `key${i}:\n  v: ${i}`) },
];

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const ms = (value: number) => `${value.toFixed(1)} ms`;

/** The process's resident memory now, in MiB. */
const rssMiB = (pid: number) => residentBytesOf(pid) / (1024 * 1024);

async function main() {
  const database = await startBenchDatabase(await freePort());
  const runtime = imageRuntime();
  const replica = await startApiProcess(database.url, runtime.env);
  try {
    const token = await benchPat(database.db, 'operator', 'bench-hostile');
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const idle = rssMiB(replica.pid);
    const out = [
      `Hostile contents — ${concurrency} uploads at once, ${rounds} rounds a shape, against one api replica; ${os.cpus().length} cores, node ${process.version}, ${runtime.description}, load average ${os.loadavg()[0]!.toFixed(2)} at the start; replica RSS idle ${idle.toFixed(0)} MiB`,
      `reproduce: npm run bench:hostile-content -- --concurrency ${concurrency} --rounds ${rounds}`,
    ];
    for (const shape of SHAPES) {
      const created = await fetch(`${replica.url}/api/configurations`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          name: `bench-${shape.format}-${Math.random().toString(36).slice(2)}`,
          format: shape.format,
        }),
      });
      const { id } = (await created.json()) as { id: string };
      const body = JSON.stringify({ content: shape.content });

      let uploading = true;
      let peak = rssMiB(replica.pid);
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(replica.pid))), 20);
      const probes: number[] = [];
      const prober = (async () => {
        while (uploading) {
          const started = performance.now();
          await (await fetch(`${replica.url}/healthz`)).arrayBuffer();
          probes.push(performance.now() - started);
        }
      })();
      const statuses = new Map<number, number>();
      const durations: number[] = [];
      for (let round = 0; round < rounds; round++) {
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            const started = performance.now();
            const res = await fetch(`${replica.url}/api/configurations/${id}/versions`, {
              method: 'POST',
              headers,
              body,
            });
            await res.arrayBuffer();
            durations.push(performance.now() - started);
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          }),
        );
      }
      uploading = false;
      await prober;
      clearInterval(sampler);
      probes.sort((a, b) => a - b);
      durations.sort((a, b) => a - b);
      out.push(
        `${shape.name} (${(Buffer.byteLength(shape.content) / 1024).toFixed(0)} KiB): ` +
          `answers ${[...statuses].map(([status, count]) => `${count}×${status}`).join(', ')}, ` +
          `upload p50 ${ms(quantile(durations, 0.5))} max ${ms(durations.at(-1)!)}; ` +
          `/healthz ${probes.length} probes p50 ${ms(quantile(probes, 0.5))} p99 ${ms(quantile(probes, 0.99))} max ${ms(probes.at(-1)!)}; ` +
          `replica RSS peak ${peak.toFixed(0)} MiB`,
      );
      process.stdout.write(`${out.at(-1)}\n`);
    }
    process.stdout.write(`\n${out.join('\n')}\n`);
  } finally {
    await replica.stop();
    await database.stop();
  }
}

runBench(main);
