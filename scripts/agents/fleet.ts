/** N simulated agents sharing one connect limiter and one keep-alive HTTP(S) agent. */
import { SimulatedAgent } from './agent';
import type { AgentState, SimulatedAgentOptions } from './agent-state';
import { createSharedResources } from './shared-resources';

export interface FleetOptions extends Omit<SimulatedAgentOptions, 'instanceUid' | 'shared'> {
  count: number;
  /** Connection attempts in flight at once (default 200). */
  connectConcurrency?: number;
  /** Per-agent overrides (service name, apply hook…). */
  agentOptions?: (index: number) => Partial<SimulatedAgentOptions>;
}

export interface FleetStats {
  agents: number;
  connected: number;
  enrolled: number;
  mtls: number;
  certificates: number;
  configsApplied: number;
  configsFailed: number;
  refused: number;
  errors: number;
}

export interface Fleet {
  agents: SimulatedAgent[];
  /** Resolves once each agent's first connection attempt is settled (admitted, refused or failed). */
  ready: Promise<void>;
  stats(): FleetStats;
  /** Resolves when every agent satisfies `predicate`. */
  waitForAll(predicate: (state: AgentState) => boolean, timeoutMs?: number): Promise<void>;
  /** agent_disconnect and a clean close for every agent (`connectConcurrency` at a time). */
  stop(): Promise<void>;
}

/** Starts `count` agents through one connect limiter; returns at once (see `ready`). */
export function startFleet(options: FleetOptions): Fleet {
  const { count, connectConcurrency = 200, agentOptions, ...common } = options;
  const shared = createSharedResources(connectConcurrency);
  const agents = Array.from(
    { length: count },
    (_, index) => new SimulatedAgent({ ...common, ...agentOptions?.(index), shared }),
  );
  const ready = Promise.all(agents.map((agent) => agent.start())).then(() => undefined);
  return {
    agents,
    ready,
    stats: () => fleetStats(agents),
    waitForAll: async (predicate, timeoutMs = 10_000) => {
      await Promise.all(agents.map((agent) => agent.waitFor(predicate, timeoutMs)));
    },
    stop: async () => {
      await inBatches(agents, connectConcurrency, (agent) => agent.stop());
      shared.destroy();
    },
  };
}

/** `startFleet`, resolved once the fleet is ready. */
export async function runFleet(options: FleetOptions): Promise<Fleet> {
  const fleet = startFleet(options);
  await fleet.ready;
  return fleet;
}

export function fleetStats(agents: SimulatedAgent[]): FleetStats {
  const stats: FleetStats = {
    agents: agents.length,
    connected: 0,
    enrolled: 0,
    mtls: 0,
    certificates: 0,
    configsApplied: 0,
    configsFailed: 0,
    refused: 0,
    errors: 0,
  };
  for (const { state } of agents) {
    stats.connected += Number(state.connected);
    stats.enrolled += Number(state.enrolled);
    stats.mtls += Number(state.mtls);
    stats.certificates += Number(Boolean(state.certificate));
    stats.configsApplied += state.configsApplied;
    stats.configsFailed += state.configsFailed;
    stats.refused += Number(Boolean(state.refused));
    stats.errors += state.errors;
  }
  return stats;
}

async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}
