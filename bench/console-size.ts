/**
 * What a browser downloads to open the console on the overview, as the api serves the build
 * (scripts/console-compress.ts): index.html, the scripts and style sheet it names, and the
 * overview's own chunk, each uncompressed, as Brotli and as gzip. Run after
 * `npm run console:build`; the goal (issue 29) is under 250 KB compressed.
 *
 *   npm run bench:console-size [-- console/dist]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const dist = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'console', 'dist'));
const index = readFileSync(path.join(dist, 'index.html'), 'utf8');
const named = [...index.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!);
const overview = readdirSync(path.join(dist, 'assets'))
  .filter((name) => /^Overview-.*\.js$/.test(name))
  .map((name) => `/assets/${name}`)
  .sort((a, b) => statSync(path.join(dist, b)).mtimeMs - statSync(path.join(dist, a)).mtimeMs)[0];
if (!overview) throw new Error(`no Overview chunk in ${dist}/assets: build the console first (npm run console:build)`);

const size = (file: string) => statSync(path.join(dist, file)).size;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const totals = { raw: index.length, br: index.length, gzip: index.length };
for (const file of [...named, overview]) {
  const [raw, br, gzip] = [size(file), size(`${file}.br`), size(`${file}.gz`)];
  totals.raw += raw;
  totals.br += br;
  totals.gzip += gzip;
  process.stdout.write(
    `${file.padEnd(40)} ${kb(raw).padStart(10)} ${kb(br).padStart(10)} br ${kb(gzip).padStart(10)} gzip\n`,
  );
}
process.stdout.write(
  `first load of the overview: ${kb(totals.raw)} uncompressed, ${kb(totals.br)} as Brotli, ${kb(totals.gzip)} as gzip\n` +
    'reproduce: npm run console:build && npm run bench:console-size\n',
);
