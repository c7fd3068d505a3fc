import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The service's version, from its package.json: the nearest one above this file, which is
 * the checkout's when run from source and the image's (beside dist/) when built. Read at
 * run time rather than imported, so the build does not copy package.json into dist/.
 */
function packageVersion(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    if (dirname(dir) === dir) throw new Error('package.json not found above platform/version');
  }
}

/** As peers see it in GET /api/federation/ping. */
export const SERVICE_VERSION: string = packageVersion();
