# One image for every process of the fleet configuration service, built to JavaScript
# (`npm run build`, dist/) and run on Node 24 LTS:
#   api (default)  node dist/api/main.js
#   worker         node dist/worker/main.js
#   migrations     node dist/scripts/fleet.js migrate
#   operator CLI   node dist/scripts/fleet.js <command>     (create-pat, verify-audit, help)
# e.g. `docker run --rm --env-file fleet.env IMAGE node dist/scripts/fleet.js migrate`.
# The worker bundles the workflows from dist/workflows when it starts (webpack and swc come
# with @temporalio/worker, a runtime dependency).

# --- build: every dependency, TypeScript to dist/, the console to dist/console/dist ---
FROM node:24-bookworm-slim AS build

ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    SCARF_ANALYTICS=false

WORKDIR /app

# tsc needs no install scripts (native binaries of swc, esbuild, embedded Postgres, buf).
COPY package.json package-lock.json ./
COPY .ci/npm-ci .ci/
RUN .ci/npm-ci --ignore-scripts --no-audit

COPY tsconfig.json tsconfig.build.json ./
COPY api/ api/
COPY gateway/ gateway/
COPY domain/ domain/
COPY platform/ platform/
COPY workflows/ workflows/
COPY activities/ activities/
COPY worker/ worker/
COPY db/ db/
COPY scripts/ scripts/
RUN npm run build

# The operator console (a static build the api serves at /): into dist/console/dist, where
# the compiled api looks for it (api/middleware/console.ts, ../../console/dist).
COPY console/ console/
RUN npm run console:build && mkdir -p dist/console && cp -r console/dist dist/console/dist

# --- runtime: production dependencies and dist/ ---
FROM node:24-bookworm-slim

# git: simple-git shells out to it for Git configuration sources.
# libjemalloc2: the agent listener's memory under reconnect storms. With glibc malloc, each
# round of all agents reconnecting left fragmented native memory behind (RSS grew round after
# round); with jemalloc it stays at the connected level (docs/performance.md).
# MALLOC_CONF: allocations of 32 KiB and more (each TLS socket's 64 KiB read buffer, of which
# an idle agent's socket touches a page) from an arena of their own that gives their pages
# back when freed: a reused buffer no longer brings back pages small allocations had filled.
# NODE_OPTIONS: V8's young generation capped at two 16 MiB semi-spaces (Node 20's size); Node
# 24 sizes it from the host's memory and under 4,000 agents it grew to 123 MiB for no gain.
# bench/image-runtime.ts runs the benches with the same values.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates libjemalloc2 \
 && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2 \
 && rm -rf /var/lib/apt/lists/*

ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2 \
    MALLOC_CONF=oversize_threshold:32768 \
    NODE_OPTIONS=--max-semi-space-size=16 \
    NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    SCARF_ANALYTICS=false

WORKDIR /app

# Install scripts run as usual (@swc/core, protobufjs, esbuild); package.json's `allowScripts`
# lists them, so they keep running once npm enforces that list (npm 12).
COPY package.json package-lock.json ./
COPY .ci/npm-ci .ci/
RUN .ci/npm-ci --omit=dev --no-audit && npm cache clean --force

COPY --from=build /app/dist/ dist/

USER node

# 8080: HTTP API; 4320: agent listener (Agents:Listen).
EXPOSE 8080 4320

CMD ["node", "dist/api/main.js"]
