/**
 * Precompresses the built console's assets (`npm run console:build` runs it on console/dist):
 * beside every script, style sheet and other text file under assets/, a Brotli (`.br`,
 * quality 11) and a gzip (`.gz`, level 9) copy, which the api serves to browsers that accept
 * them (api/middleware/console.ts). Compressing once at build costs nothing per request;
 * the best settings are too slow to use per request.
 *
 *   node --import tsx scripts/console-compress.ts [dist]
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const COMPRESSIBLE = new Set(['.js', '.css', '.svg', '.json', '.txt', '.html']);
/** Below this, compression saves less than the headers it adds. */
const MIN_BYTES = 1024;

/** Writes the `.br` and `.gz` of each compressible asset under `dist/assets`; answers how many files. */
export function compressAssets(dist: string): number {
  const assets = path.join(dist, 'assets');
  let compressed = 0;
  for (const name of readdirSync(assets)) {
    if (!COMPRESSIBLE.has(path.extname(name))) continue;
    const file = path.join(assets, name);
    const content = readFileSync(file);
    if (content.length < MIN_BYTES) continue;
    writeFileSync(
      `${file}.br`,
      brotliCompressSync(content, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
          [constants.BROTLI_PARAM_SIZE_HINT]: content.length,
        },
      }),
    );
    writeFileSync(`${file}.gz`, gzipSync(content, { level: 9 }));
    compressed++;
  }
  return compressed;
}

if (require.main === module) {
  const dist = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'console', 'dist'));
  process.stdout.write(`precompressed ${compressAssets(dist)} console assets (br, gzip) in ${dist}\n`);
}
