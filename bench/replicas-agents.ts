/**
 * A share of bench/replicas.ts's agents, in a process of its own (real agents are on other
 * machines, and 10,000 TLS clients would starve the bench's own clock). Driven over IPC:
 * `start` runs the share (each agent enrols with the token, sends a CSR and reconnects with
 * its certificate, as bench:gateway's do), `stats` answers what the bench prints, `stop`
 * disconnects them all and exits.
 *
 * Every 100 ms each agent's connection is sampled: an agent seen disconnected and later
 * connected again adds one outage (ms, to the sample's resolution) to `outages`, which
 * `stats` with `reset` empties (one fault's outages at a time).
 */
import { startFleet, type Fleet } from '../scripts/agents/fleet';

export type AgentsRequest =
  | { type: 'start'; count: number; endpoint: string; ca: string; token: string; concurrency: number }
  | { type: 'stats'; reset?: boolean }
  | { type: 'stop' };

export interface AgentsStats {
  type: 'stats';
  agents: number;
  enrolled: number;
  /** Connected with their certificate. */
  mtls: number;
  connected: number;
  /** How many agents run each configuration hash (hex). */
  running: Record<string, number>;
  /** Configurations applied, over all agents and the whole run. */
  applied: number;
  refused: number;
  /** Outages (ms) that ended since the last reset. */
  outages: number[];
  /** Agents disconnected right now. */
  down: number;
}

const SAMPLE_MS = 100;
let fleet: Fleet | undefined;
let downSince: Array<number | undefined> = [];
let outages: number[] = [];

function sample(): void {
  const now = Date.now();
  fleet!.agents.forEach(({ state }, i) => {
    if (!state.enrolled || state.stopped) return;
    const since = downSince[i];
    if (!state.connected && since === undefined) downSince[i] = now;
    else if (state.connected && since !== undefined) {
      outages.push(now - since);
      downSince[i] = undefined;
    }
  });
}

function stats(reset: boolean): AgentsStats {
  const running: Record<string, number> = {};
  let enrolled = 0;
  let mtls = 0;
  let connected = 0;
  let applied = 0;
  let refused = 0;
  for (const { state } of fleet!.agents) {
    enrolled += Number(state.enrolled);
    mtls += Number(state.connected && state.mtls);
    connected += Number(state.connected);
    applied += state.configsApplied;
    refused += Number(Boolean(state.refused));
    if (state.lastConfigHash) running[state.lastConfigHash] = (running[state.lastConfigHash] ?? 0) + 1;
  }
  const answer: AgentsStats = {
    type: 'stats',
    agents: fleet!.agents.length,
    enrolled,
    mtls,
    connected,
    running,
    applied,
    refused,
    outages,
    down: downSince.filter((since) => since !== undefined).length,
  };
  if (reset) outages = [];
  return answer;
}

// The bench gone (even killed), its agents go too.
process.on('disconnect', () => process.exit(0));

process.on('message', (request: AgentsRequest) => {
  switch (request.type) {
    case 'start':
      fleet = startFleet({
        count: request.count,
        endpoint: request.endpoint,
        ca: request.ca,
        token: request.token,
        connectConcurrency: request.concurrency,
        // A replica gone: agents come back within seconds, spread out (back-off with jitter).
        reconnectMinMs: 250,
        reconnectMaxMs: 5_000,
      });
      downSince = fleet.agents.map(() => undefined);
      setInterval(sample, SAMPLE_MS).unref();
      process.send!({ type: 'started' });
      return;
    case 'stats':
      process.send!(stats(request.reset ?? false));
      return;
    case 'stop':
      void (fleet?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
  }
});
