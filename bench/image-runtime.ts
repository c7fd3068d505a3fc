/**
 * The allocator the image gives the api (Dockerfile: jemalloc preloaded, its MALLOC_CONF),
 * for the benches' server processes, so that they measure what a replica runs.
 */
import { existsSync } from 'node:fs';

/**
 * jemalloc's settings in the image (the Dockerfile's `MALLOC_CONF`; test/deploy.unit.test.ts
 * holds the two equal): allocations of 32 KiB and more (each TLS socket's 64 KiB read buffer,
 * of which an idle agent's socket touches a page) come from an arena of their own that
 * returns their pages when they are freed, so a reused buffer does not bring back pages
 * other allocations had filled (docs/performance.md, the gateway's RSS).
 */
export const IMAGE_MALLOC_CONF = 'oversize_threshold:32768';

/**
 * The environment that gives a server process the image's allocator: Debian's jemalloc
 * preloaded, with the image's settings (MALLOC_CONF set for the bench replaces them, to try
 * others). Empty (with a line saying so) when it is missing.
 */
export function imageAllocator(): { LD_PRELOAD: string; MALLOC_CONF: string } | Record<string, never> {
  const library = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
  if (existsSync(library)) return { LD_PRELOAD: library, MALLOC_CONF: process.env.MALLOC_CONF ?? IMAGE_MALLOC_CONF };
  process.stderr.write('libjemalloc2 is missing (apt-get install -y libjemalloc2): measuring with glibc malloc\n');
  return {};
}
