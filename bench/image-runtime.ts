/**
 * The runtime the image gives the api (Dockerfile: Node's major version, jemalloc preloaded
 * with its MALLOC_CONF, NODE_OPTIONS), for the benches' server processes, so that they
 * measure what a replica runs.
 */
import { existsSync } from 'node:fs';

/** The Node.js major version of the image's runtime stage (its `FROM node:<major>-…`). */
export const IMAGE_NODE_MAJOR = 24;

/**
 * jemalloc's settings in the image (the Dockerfile's `MALLOC_CONF`; test/deploy.unit.test.ts
 * holds the two equal): allocations of 32 KiB and more (each TLS socket's 64 KiB read buffer,
 * of which an idle agent's socket touches a page) come from an arena of their own that
 * returns their pages when they are freed, so a reused buffer does not bring back pages
 * other allocations had filled (docs/performance.md, the gateway's RSS).
 */
export const IMAGE_MALLOC_CONF = 'oversize_threshold:32768';

/**
 * The image's `NODE_OPTIONS`: V8's young generation capped at two 16 MiB semi-spaces, what
 * Node 20 had. Node 24 sizes it from the machine's memory, and on a large host it grew to
 * 123 MiB under 4,000 agents for no gain (docs/performance.md, the gateway's RSS).
 */
export const IMAGE_NODE_OPTIONS = '--max-semi-space-size=16';

export interface ImageRuntime {
  /** The environment for a server process: the image's allocator and V8 settings. */
  env: { LD_PRELOAD?: string; MALLOC_CONF?: string; NODE_OPTIONS: string };
  /** What a bench's header says about it, e.g. `jemalloc (oversize_threshold:32768), --max-semi-space-size=16`. */
  description: string;
}

/**
 * The image's runtime for a server process: Debian's jemalloc preloaded with the image's
 * settings, and its NODE_OPTIONS. MALLOC_CONF or NODE_OPTIONS set for the bench replace the
 * image's, to try others. Says so on stderr when jemalloc is missing or this Node is not the
 * image's major version (its memory figures differ: docs/performance.md).
 */
export function imageRuntime(): ImageRuntime {
  const nodeOptions = process.env.NODE_OPTIONS ?? IMAGE_NODE_OPTIONS;
  const v8Settings = nodeOptions || 'no NODE_OPTIONS';
  const major = Number(process.versions.node.split('.')[0]);
  if (major !== IMAGE_NODE_MAJOR) {
    process.stderr.write(
      `measuring on Node ${process.versions.node}; the image runs Node ${IMAGE_NODE_MAJOR}, whose memory and CPU figures differ\n`,
    );
  }
  const library = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';
  if (!existsSync(library)) {
    process.stderr.write('libjemalloc2 is missing (apt-get install -y libjemalloc2): measuring with glibc malloc\n');
    return { env: { NODE_OPTIONS: nodeOptions }, description: `glibc malloc, ${v8Settings}` };
  }
  const mallocConf = process.env.MALLOC_CONF ?? IMAGE_MALLOC_CONF;
  return {
    env: { LD_PRELOAD: library, MALLOC_CONF: mallocConf, NODE_OPTIONS: nodeOptions },
    description: `jemalloc (${mallocConf}), ${v8Settings}`,
  };
}
