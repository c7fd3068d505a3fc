# One image for every process of the fleet configuration service:
#   api (default)  node --import tsx api/main.ts
#   worker         node --import tsx worker/main.ts
#   migrations     node --import tsx scripts/fleet.ts migrate
#   operator CLI   node --import tsx scripts/fleet.ts <command>
# TypeScript runs through tsx (a runtime dependency), so there is no build step.
FROM node:20-bookworm-slim

# git: simple-git shells out to it for Git configuration sources.
# libjemalloc2: the agent listener's memory under reconnect storms. With glibc malloc, each
# round of all agents reconnecting left fragmented native memory behind (RSS grew round after
# round); with jemalloc it stays at the connected level (docs/performance.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates libjemalloc2 \
 && ln -s "$(find /usr/lib -name libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2 \
 && rm -rf /var/lib/apt/lists/*

ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2 \
    NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    SCARF_ANALYTICS=false

WORKDIR /app

# package.json's `allowScripts` is read by npm 11 only; the npm 10 bundled with node 20
# runs install scripts as usual, which esbuild (tsx), @swc/core and protobufjs need.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY api/ api/
COPY workflows/ workflows/
COPY activities/ activities/
COPY worker/ worker/
COPY db/ db/
COPY scripts/ scripts/
COPY tsconfig.json ./

USER node

# 8080: HTTP API; 4320: agent listener (Agents:Listen).
EXPOSE 8080 4320

CMD ["node", "--import", "tsx", "api/main.ts"]
