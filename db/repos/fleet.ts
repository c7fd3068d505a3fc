/**
 * The fleet at a glance: counts over a tenant's agents as they are now, and the per-minute
 * census (`fleet_minutes`) that keeps how many were online over the last days.
 */
import type { Db } from '../connection';
import { AGENT_STATUSES, type AgentStatus } from './agents';

export interface AgentCounts {
  total: number;
  byStatus: Record<AgentStatus, number>;
  /** Of the online agents: by the last ComponentHealth each reported (none yet: unknown). */
  health: { healthy: number; unhealthy: number; unknown: number };
  /** Agents whose last report on a configuration was FAILED. */
  failedApplies: number;
  /** Agents with no desired configuration. */
  withoutConfiguration: number;
}

/** Every count the overview shows of the tenant's agents, in one pass over them. */
export async function agentCounts(db: Db, tenantId: string): Promise<AgentCounts> {
  const rows: Array<{
    status: AgentStatus;
    n: string;
    healthy: string;
    unhealthy: string;
    failed: string;
    without: string;
  }> = (
    await db.raw(
      `SELECT status, count(*) AS n,
              count(*) FILTER (WHERE health IS NOT NULL AND unhealthy_since IS NULL) AS healthy,
              count(*) FILTER (WHERE health IS NOT NULL AND unhealthy_since IS NOT NULL) AS unhealthy,
              count(*) FILTER (WHERE applied_status = 'FAILED') AS failed,
              count(*) FILTER (WHERE desired_configuration_id IS NULL) AS without
         FROM agents WHERE tenant_id = ? GROUP BY status`,
      [tenantId],
    )
  ).rows;
  const counts: AgentCounts = {
    total: 0,
    byStatus: Object.fromEntries(AGENT_STATUSES.map((status) => [status, 0])) as Record<AgentStatus, number>,
    health: { healthy: 0, unhealthy: 0, unknown: 0 },
    failedApplies: 0,
    withoutConfiguration: 0,
  };
  for (const row of rows) {
    const n = Number(row.n);
    counts.total += n;
    counts.byStatus[row.status] = n;
    counts.failedApplies += Number(row.failed);
    counts.withoutConfiguration += Number(row.without);
    if (row.status !== 'online') continue;
    counts.health.healthy = Number(row.healthy);
    counts.health.unhealthy = Number(row.unhealthy);
    counts.health.unknown = n - counts.health.healthy - counts.health.unhealthy;
  }
  return counts;
}

export interface ConfigurationSpread {
  configurationId: string;
  name: string;
  /** The newest published version: agents desiring an older one are behind. */
  publishedVersion: number | null;
  agents: number;
  versions: Array<{ version: number; agents: number; applied: number; failed: number }>;
}

/**
 * The agents by desired configuration and version (newest first), for the `limit`
 * configurations with the most agents; `others` counts the rest. `applied` / `failed`: of
 * those agents, how many reported that very version APPLIED / FAILED.
 */
export async function configurationSpread(
  db: Db,
  tenantId: string,
  limit: number,
): Promise<{ configurations: ConfigurationSpread[]; others: { configurations: number; agents: number } }> {
  const rows: Array<{
    configuration_id: string;
    name: string;
    published_version: number | null;
    version: number;
    agents: string;
    applied: string;
    failed: string;
  }> = (
    await db.raw(
      `SELECT s.configuration_id, c.name, c.published_version, s.version, s.agents, s.applied, s.failed
         FROM (SELECT desired_configuration_id AS configuration_id, desired_version AS version, count(*) AS agents,
                      count(*) FILTER (WHERE applied_hash = desired_hash AND applied_status = 'APPLIED') AS applied,
                      count(*) FILTER (WHERE applied_hash = desired_hash AND applied_status = 'FAILED') AS failed
                 FROM agents
                WHERE tenant_id = ? AND desired_configuration_id IS NOT NULL
                GROUP BY 1, 2) s
         JOIN configurations c ON c.id = s.configuration_id
        ORDER BY s.configuration_id, s.version DESC`,
      [tenantId],
    )
  ).rows;
  const spread = new Map<string, ConfigurationSpread>();
  for (const row of rows) {
    let configuration = spread.get(row.configuration_id);
    if (!configuration)
      spread.set(
        row.configuration_id,
        (configuration = {
          configurationId: row.configuration_id,
          name: row.name,
          publishedVersion: row.published_version,
          agents: 0,
          versions: [],
        }),
      );
    const agents = Number(row.agents);
    configuration.agents += agents;
    configuration.versions.push({
      version: row.version,
      agents,
      applied: Number(row.applied),
      failed: Number(row.failed),
    });
  }
  const ranked = [...spread.values()].sort((a, b) => b.agents - a.agents || a.name.localeCompare(b.name));
  const rest = ranked.slice(limit);
  return {
    configurations: ranked.slice(0, limit),
    others: { configurations: rest.length, agents: rest.reduce((sum, one) => sum + one.agents, 0) },
  };
}

// ---------------------------------------------------------------------------------------
// The per-minute census

/**
 * Counts every tenant's agents now into the row of this minute (a second count within the
 * minute replaces the first); answers how many tenants it counted.
 */
export async function recordFleetMinute(db: Db): Promise<number> {
  const result = await db.raw(
    `INSERT INTO fleet_minutes (tenant_id, minute, online, unhealthy, enrolled)
     SELECT t.id, date_trunc('minute', now()),
            count(a.id) FILTER (WHERE a.status = 'online'),
            count(a.id) FILTER (WHERE a.status = 'online' AND a.health IS NOT NULL AND a.unhealthy_since IS NOT NULL),
            count(a.id) FILTER (WHERE a.status IN ('enrolling', 'online', 'offline'))
       FROM tenants t LEFT JOIN agents a ON a.tenant_id = t.id
      GROUP BY t.id
     ON CONFLICT (tenant_id, minute)
     DO UPDATE SET online = excluded.online, unhealthy = excluded.unhealthy, enrolled = excluded.enrolled`,
  );
  return result.rowCount ?? 0;
}

/** Deletes the census rows from before `before`; answers how many. */
export async function pruneFleetMinutes(db: Db, before: Date): Promise<number> {
  return db('fleet_minutes').where('minute', '<', before).delete();
}

export interface FleetInterval {
  /** The interval's start. */
  at: Date;
  onlineMin: number;
  onlineMax: number;
  unhealthyMax: number;
  /** Agents enrolled (online, offline or enrolling) at the interval's last count. */
  enrolled: number;
}

/**
 * The census from `since`, in intervals of `stepMinutes` (aligned to the epoch), oldest
 * first; an interval without a count (no worker ran) is absent.
 */
export async function fleetIntervals(
  db: Db,
  tenantId: string,
  since: Date,
  stepMinutes: number,
): Promise<FleetInterval[]> {
  const rows: Array<{ at: Date; online_min: number; online_max: number; unhealthy_max: number; enrolled: number }> = (
    await db.raw(
      `SELECT date_bin(make_interval(mins => ?), minute, TIMESTAMPTZ '1970-01-01 00:00:00+00') AS at,
              min(online) AS online_min, max(online) AS online_max, max(unhealthy) AS unhealthy_max,
              (array_agg(enrolled ORDER BY minute DESC))[1] AS enrolled
         FROM fleet_minutes
        WHERE tenant_id = ? AND minute >= ?
        GROUP BY 1 ORDER BY 1`,
      [stepMinutes, tenantId, since],
    )
  ).rows;
  return rows.map((row) => ({
    at: row.at,
    onlineMin: row.online_min,
    onlineMax: row.online_max,
    unhealthyMax: row.unhealthy_max,
    enrolled: row.enrolled,
  }));
}
