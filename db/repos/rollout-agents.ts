import type { Knex } from 'knex';
import type { Db } from '../connection';
import type { RolloutRow } from './rollouts';
import type { PreviousVersion } from './agent-history';
import type {
  AgentRolloutState,
  BatchProgress,
  OfflineAgentMode,
  Progress,
  RollbackProgress,
  RollbackState,
} from '../../domain/rollouts';

export interface RolloutAgentRow {
  rollout_id: string;
  agent_id: string;
  batch: number | null;
  state: AgentRolloutState;
  error: string | null;
  previous_configuration_id: string | null;
  previous_version: number | null;
  previous_hash: string | null;
  rollback_state: RollbackState | null;
  rollback_error: string | null;
  active: boolean;
  added_at: Date;
  pushed_at: Date | null;
  finished_at: Date | null;
}

/** Agents a rollout can never push to. */
const UNPUSHABLE = ['pending-approval', 'revoked', 'handed-over'];

// ---------------------------------------------------------------------------------------
// Target agents

/** The agents a target names now, as SQL over `agents a` (group members, listed agents, label matches). */
function targetCondition(rollout: Pick<RolloutRow, 'tenant_id' | 'target'>): { sql: string; bindings: Knex.Value[] } {
  const { groupIds, agentIds, labelSelector } = rollout.target;
  const selector = labelSelector ? JSON.stringify(labelSelector) : null;
  return {
    sql: `a.tenant_id = ? AND a.status <> ALL(?::text[])
          AND (a.group_id = ANY(?::uuid[]) OR a.id = ANY(?::uuid[]) OR (?::jsonb IS NOT NULL AND a.labels @> ?::jsonb))`,
    bindings: [rollout.tenant_id, UNPUSHABLE, groupIds, agentIds, selector, selector],
  };
}

/**
 * Adds the agents the target names now that are not yet in the rollout. `joining`: agents
 * in another active rollout are left out quietly (a later joiner); otherwise such an agent
 * fails the insert (23505), which the caller turns into a 409. Returns how many were added.
 */
export async function addTargetAgents(
  db: Db,
  rollout: Pick<RolloutRow, 'id' | 'tenant_id' | 'target'>,
  options: { joining: boolean },
): Promise<number> {
  const target = targetCondition(rollout);
  const result = await db.raw(
    `INSERT INTO rollout_agents (rollout_id, agent_id)
     SELECT ?, a.id FROM agents a
      WHERE ${target.sql}
        AND NOT EXISTS (SELECT 1 FROM rollout_agents mine WHERE mine.rollout_id = ? AND mine.agent_id = a.id)
     ${options.joining ? 'ON CONFLICT DO NOTHING' : ''}`,
    [rollout.id, ...target.bindings, rollout.id],
  );
  return result.rowCount ?? 0;
}

/** An active rollout other than this one that holds one of the target's agents, for a 409 that names it. */
export async function activeRolloutInTarget(
  db: Db,
  rollout: Pick<RolloutRow, 'id' | 'tenant_id' | 'target'>,
): Promise<{ agentId: string; rolloutId: string } | undefined> {
  const target = targetCondition(rollout);
  const { rows } = await db.raw(
    `SELECT ra.agent_id, ra.rollout_id FROM rollout_agents ra JOIN agents a ON a.id = ra.agent_id
      WHERE ra.active AND ra.rollout_id <> ? AND ${target.sql}
      ORDER BY ra.agent_id LIMIT 1`,
    [rollout.id, ...target.bindings],
  );
  const row = rows[0] as { agent_id: string; rollout_id: string } | undefined;
  return row && { agentId: row.agent_id, rolloutId: row.rollout_id };
}

export async function rolloutAgentIds(db: Db, rolloutId: string, batch?: number): Promise<string[]> {
  const query = db('rollout_agents').where({ rollout_id: rolloutId }).orderBy('agent_id').pluck('agent_id');
  if (batch !== undefined) query.where({ batch });
  return query;
}

/** The rollout's agent ids, as a subquery. */
export function rolloutMemberIds(db: Db, rolloutId: string): Knex.QueryBuilder {
  return db('rollout_agents').select('agent_id').where({ rollout_id: rolloutId });
}

/** One page of the rollout's agent ids, in id order after `afterId` (keyset pages over its primary key). */
export async function rolloutAgentIdsPage(
  db: Db,
  rolloutId: string,
  afterId: string | null,
  limit: number,
): Promise<string[]> {
  const ids = db('rollout_agents').where({ rollout_id: rolloutId }).orderBy('agent_id').limit(limit).pluck('agent_id');
  if (afterId) ids.where('agent_id', '>', afterId);
  return ids;
}

/** A rollout's agent with the agent's name (null when its row is gone). */
export type RolloutAgentListRow = RolloutAgentRow & { agent_name: string | null };

/** Whether the agent is one of the rollout's. */
export async function isRolloutAgent(db: Db, rolloutId: string, agentId: string): Promise<boolean> {
  return (
    (await db('rollout_agents').where({ rollout_id: rolloutId, agent_id: agentId }).first('agent_id')) !== undefined
  );
}

export function rolloutAgentsQuery(
  db: Db,
  rolloutId: string,
  filters: { state?: AgentRolloutState; batch?: number },
): Knex.QueryBuilder {
  const query = db('rollout_agents')
    .leftJoin('agents', 'agents.id', 'rollout_agents.agent_id')
    .where({ 'rollout_agents.rollout_id': rolloutId });
  if (filters.state) query.where({ 'rollout_agents.state': filters.state });
  if (filters.batch !== undefined) query.where({ 'rollout_agents.batch': filters.batch });
  return query.select('rollout_agents.*', 'agents.name as agent_name');
}

// ---------------------------------------------------------------------------------------
// Progress

const emptyProgress = (): Progress => ({
  total: 0,
  pending: 0,
  applying: 0,
  deferred: 0,
  succeeded: 0,
  failed: 0,
  skipped: 0,
});

/** Counts by state, overall and per batch, and of the rollback when there is one. */
export async function rolloutProgress(
  db: Db,
  rolloutId: string,
): Promise<{ progress: Progress; batches: BatchProgress[]; rollback: RollbackProgress | null }> {
  const rows: Array<{
    batch: number | null;
    state: AgentRolloutState;
    rollback_state: RollbackState | null;
    n: string;
  }> = await db('rollout_agents')
    .where({ rollout_id: rolloutId })
    .groupBy('batch', 'state', 'rollback_state')
    .select('batch', 'state', 'rollback_state', db.raw('count(*) AS n'));
  const progress = emptyProgress();
  const batches = new Map<number, BatchProgress>();
  let rollback: RollbackProgress | null = null;
  for (const row of rows) {
    const n = Number(row.n);
    progress.total += n;
    progress[row.state] += n;
    if (row.batch !== null) {
      let batch = batches.get(row.batch);
      if (!batch) batches.set(row.batch, (batch = { batch: row.batch, ...emptyProgress() }));
      batch.total += n;
      batch[row.state] += n;
    }
    if (row.rollback_state) {
      rollback ??= { pending: 0, applying: 0, succeeded: 0, failed: 0, skipped: 0 };
      rollback[row.rollback_state] += n;
    }
  }
  return { progress, batches: [...batches.values()].sort((a, b) => a.batch - b.batch), rollback };
}

// ---------------------------------------------------------------------------------------
// Holding agents (`active`: an agent is in one active rollout at most)

/** A rollout in a final state holds its agents no longer: another rollout may take them. */
export async function releaseRolloutAgents(db: Db, rolloutId: string): Promise<void> {
  await db('rollout_agents').where({ rollout_id: rolloutId, active: true }).update({ active: false });
}

/** Takes back the agents the rollout touched (pushed to) that no other active rollout holds (a rollback). */
export async function retakeTouchedAgents(db: Db, rolloutId: string): Promise<void> {
  await db.raw(
    `UPDATE rollout_agents ra SET active = true
      WHERE ra.rollout_id = ? AND ra.state IN ('applying', 'succeeded', 'failed') AND NOT ra.active
        AND NOT EXISTS (SELECT 1 FROM rollout_agents other WHERE other.agent_id = ra.agent_id AND other.active)`,
    [rolloutId],
  );
}

// ---------------------------------------------------------------------------------------
// Batches

/**
 * The agents of batch `batch`: assigned once (the next `size` unassigned agents by id),
 * then read back, so a retried activity gets the same batch.
 */
export async function assignBatch(db: Db, rolloutId: string, batch: number, size: number): Promise<string[]> {
  const assigned = await rolloutAgentIds(db, rolloutId, batch);
  if (assigned.length > 0) return assigned;
  const rows: Array<{ agent_id: string }> = (
    await db.raw(
      `UPDATE rollout_agents SET batch = ?
        WHERE rollout_id = ? AND agent_id IN (
          SELECT agent_id FROM rollout_agents WHERE rollout_id = ? AND batch IS NULL AND state = 'pending' ORDER BY agent_id LIMIT ?)
        RETURNING agent_id`,
      [batch, rolloutId, rolloutId, size],
    )
  ).rows;
  return rows.map((row) => row.agent_id).sort();
}

export async function countRolloutAgents(db: Db, rolloutId: string): Promise<number> {
  const [row] = await db('rollout_agents').where({ rollout_id: rolloutId }).count<Array<{ n: string }>>('* as n');
  return Number(row?.n ?? 0);
}

/** Marks agents of the rollout done with an outcome the agent never reported (denied, unreachable, timed out). */
export async function finishAgents(
  db: Db,
  rolloutId: string,
  agentIds: string[],
  state: 'failed' | 'skipped',
  error: string,
): Promise<string[]> {
  if (agentIds.length === 0) return [];
  return db('rollout_agents')
    .where({ rollout_id: rolloutId })
    .whereRaw('agent_id = ANY(?::uuid[])', [agentIds])
    .whereIn('state', ['pending', 'applying'])
    .update({ state, error, finished_at: db.fn.now() })
    .returning('agent_id')
    .then((rows: Array<{ agent_id: string }>) => rows.map((row) => row.agent_id));
}

/**
 * Settles the agents the rollout never pushed to (still `pending`, in a batch or not yet
 * assigned one) as `skipped` with `error`: a rollout that ends before reaching them leaves
 * none waiting for ever. Returns them.
 */
export async function skipPendingAgents(db: Db, rolloutId: string, error: string): Promise<string[]> {
  const rows: Array<{ agent_id: string }> = await db('rollout_agents')
    .where({ rollout_id: rolloutId, state: 'pending' })
    .update({ state: 'skipped', error, finished_at: db.fn.now() })
    .returning('agent_id');
  return rows.map((row) => row.agent_id);
}

/** Why an agent is `skipped` that was offline when its batch was pushed (strategy `offlineAgents: skip`). */
export const OFFLINE_SKIPPED = 'the agent was offline when its batch was pushed';

/** What pushing a batch does with each of its pending agents. */
export interface ClaimedBatch {
  /** Pushed and waited for (`applying`). */
  push: string[];
  /** Offline: pushed, not waited for (`deferred`); each settles when it connects and reports. */
  deferred: string[];
  /** Can no longer be pushed to (revoked, handed over, awaiting approval, gone): `skipped`. */
  unreachable: string[];
  /** Offline, and the strategy skips offline agents: `skipped`. */
  offline: string[];
}

/**
 * Claims the batch's still-pending agents for pushing (locks them; records what each had
 * before, for a rollback): online agents are `applying`, offline ones `applying`, `deferred`
 * or `skipped` as `offline` says, agents that can no longer be pushed to `skipped`. Run in the
 * transaction that pushes: a retry after a crash finds them claimed and pushes none twice.
 */
export async function claimBatchForPush(
  db: Db,
  rolloutId: string,
  batch: number,
  offline: OfflineAgentMode,
): Promise<ClaimedBatch> {
  const rows: Array<{ agent_id: string; status: string | null }> = (
    await db.raw(
      `SELECT ra.agent_id, a.status
         FROM rollout_agents ra LEFT JOIN agents a ON a.id = ra.agent_id
        WHERE ra.rollout_id = ? AND ra.batch = ? AND ra.state = 'pending'
        ORDER BY ra.agent_id
        FOR UPDATE OF ra`,
      [rolloutId, batch],
    )
  ).rows;
  const claimed: ClaimedBatch = { push: [], deferred: [], unreachable: [], offline: [] };
  for (const { agent_id: id, status } of rows) {
    if (status === null || UNPUSHABLE.includes(status)) claimed.unreachable.push(id);
    else if (status === 'offline' && offline === 'defer') claimed.deferred.push(id);
    else if (status === 'offline' && offline === 'skip') claimed.offline.push(id);
    else claimed.push.push(id);
  }
  await markPushed(db, rolloutId, claimed.push, 'applying');
  await markPushed(db, rolloutId, claimed.deferred, 'deferred');
  await finishAgents(
    db,
    rolloutId,
    claimed.unreachable,
    'skipped',
    'the agent can no longer receive configurations (revoked, handed over or awaiting approval)',
  );
  await finishAgents(db, rolloutId, claimed.offline, 'skipped', OFFLINE_SKIPPED);
  return claimed;
}

/** Agents pushed now, in `state`, with what each had before (the applied version, else the desired one). */
async function markPushed(db: Db, rolloutId: string, agentIds: string[], state: 'applying' | 'deferred') {
  if (agentIds.length === 0) return;
  await db.raw(
    `UPDATE rollout_agents ra
        SET state = ?, pushed_at = now(),
            previous_configuration_id = CASE WHEN a.applied_status = 'APPLIED' AND a.applied_configuration_id IS NOT NULL THEN a.applied_configuration_id ELSE a.desired_configuration_id END,
            previous_version = CASE WHEN a.applied_status = 'APPLIED' AND a.applied_configuration_id IS NOT NULL THEN a.applied_version ELSE a.desired_version END,
            previous_hash = CASE WHEN a.applied_status = 'APPLIED' AND a.applied_configuration_id IS NOT NULL THEN a.applied_hash ELSE a.desired_hash END
       FROM agents a
      WHERE ra.rollout_id = ? AND ra.agent_id = a.id AND ra.agent_id = ANY(?::uuid[])`,
    [state, rolloutId, agentIds],
  );
}

/** An agent's report, as its rollout records it: APPLIED → succeeded, FAILED → failed with the agent's message. */
const SETTLED_BY_REPORT = `state = CASE WHEN a.applied_status = 'APPLIED' THEN 'succeeded' ELSE 'failed' END,
              error = CASE WHEN a.applied_status = 'APPLIED' THEN NULL ELSE coalesce(a.applied_error, 'the agent reported FAILED') END,
              finished_at = now(),
              disconnects_at_apply = a.disconnects`;
/** The agent `a` of row `ra` has reported on the hash bound here. */
const REPORTED_ON_HASH = `a.id = ra.agent_id AND a.applied_hash = ? AND a.applied_status IN ('APPLIED', 'FAILED')`;

export interface SettledAgent {
  agent_id: string;
  state: 'succeeded' | 'failed';
  error: string | null;
}

/** A deferred agent settled: by its report, or skipped because a later push replaced the configuration. */
export interface SettledDeferredAgent {
  agent_id: string;
  batch: number;
  state: 'succeeded' | 'failed' | 'skipped';
  error: string | null;
}

/** Why a deferred agent is skipped that another push reached before it came online. */
const REPLACED_WHILE_OFFLINE = "a later push replaced this rollout's configuration before the agent came online";

/**
 * Deferred agents of the rollout (any batch) that came online and reported on `hash`:
 * APPLIED → succeeded, FAILED → failed; those whose desired configuration another push
 * replaced meanwhile are skipped. Returns them, with their batch.
 */
export async function settleDeferred(db: Db, rolloutId: string, hash: string): Promise<SettledDeferredAgent[]> {
  const reported: SettledDeferredAgent[] = (
    await db.raw(
      `UPDATE rollout_agents ra
          SET ${SETTLED_BY_REPORT}
         FROM agents a
        WHERE ra.rollout_id = ? AND ra.state = 'deferred'
          AND ${REPORTED_ON_HASH}
        RETURNING ra.agent_id, ra.batch, ra.state, ra.error`,
      [rolloutId, hash],
    )
  ).rows;
  const replaced: SettledDeferredAgent[] = (
    await db.raw(
      `UPDATE rollout_agents ra SET state = 'skipped', error = ?, finished_at = now()
         FROM agents a
        WHERE ra.rollout_id = ? AND ra.state = 'deferred'
          AND a.id = ra.agent_id AND a.desired_hash IS DISTINCT FROM ?
        RETURNING ra.agent_id, ra.batch, ra.state, ra.error`,
      [REPLACED_WHILE_OFFLINE, rolloutId, hash],
    )
  ).rows;
  return [...reported, ...replaced];
}

export async function countDeferred(db: Db, rolloutId: string): Promise<number> {
  const [row] = await db('rollout_agents')
    .where({ rollout_id: rolloutId, state: 'deferred' })
    .count<Array<{ n: string }>>('* as n');
  return Number(row?.n ?? 0);
}

/**
 * Stops delivering to the rollout's deferred agents: each is settled `skipped` with
 * `error`, and its desired configuration is again the one it had before (where it is still
 * this rollout's `hash`), so it never gets this version when it connects. `rollback`: the
 * rollback records them too, as skipped with why. Returns them, with their batch.
 */
export async function withdrawDeferred(
  db: Db,
  rolloutId: string,
  hash: string,
  error: string,
  rollback?: string,
): Promise<SettledDeferredAgent[]> {
  await db.raw(
    `UPDATE agents a
        SET desired_configuration_id = ra.previous_configuration_id, desired_version = ra.previous_version,
            desired_hash = ra.previous_hash, updated_at = now()
       FROM rollout_agents ra
      WHERE ra.rollout_id = ? AND ra.state = 'deferred' AND a.id = ra.agent_id AND a.desired_hash = ?`,
    [rolloutId, hash],
  );
  const rows: SettledDeferredAgent[] = await db('rollout_agents')
    .where({ rollout_id: rolloutId, state: 'deferred' })
    .update({
      state: 'skipped',
      error,
      finished_at: db.fn.now(),
      ...(rollback ? { rollback_state: 'skipped', rollback_error: rollback } : {}),
    })
    .returning(['agent_id', 'batch', 'state', 'error']);
  return rows;
}

/** Agents of the batch whose report on `hash` is in: APPLIED → succeeded, FAILED → failed. */
export async function settleBatch(db: Db, rolloutId: string, batch: number, hash: string): Promise<SettledAgent[]> {
  return (
    await db.raw(
      `UPDATE rollout_agents ra
          SET ${SETTLED_BY_REPORT}
         FROM agents a
        WHERE ra.rollout_id = ? AND ra.batch = ? AND ra.state = 'applying'
          AND ${REPORTED_ON_HASH}
        RETURNING ra.agent_id, ra.state, ra.error`,
      [rolloutId, batch, hash],
    )
  ).rows;
}

/** The batch's agents still applying, and when the first of them was pushed (the apply timeout runs from then). */
export async function batchWaiting(
  db: Db,
  rolloutId: string,
  batch: number,
): Promise<{ applying: number; pushedAt: Date | null }> {
  const row = await db('rollout_agents')
    .where({ rollout_id: rolloutId, batch, state: 'applying' })
    .first(db.raw('count(*)::int AS applying'), db.raw('min(pushed_at) AS pushed_at'));
  return { applying: row?.applying ?? 0, pushedAt: row?.pushed_at ?? null };
}

/** Fails the batch's agents still applying (their deadline passed, or the batch was abandoned); returns them. */
export async function failApplying(db: Db, rolloutId: string, batch: number, error: string): Promise<string[]> {
  const rows: Array<{ agent_id: string }> = await db('rollout_agents')
    .where({ rollout_id: rolloutId, batch, state: 'applying' })
    .update({ state: 'failed', error, finished_at: db.fn.now() })
    .returning('agent_id');
  return rows.map((row) => row.agent_id);
}

/** An agent of a baking batch the health gate fails: unhealthy for long enough, or its connection dropping too often. */
export interface HealthGateCandidate {
  agent_id: string;
  health: Record<string, unknown> | null;
  /** Seconds the agent has been unhealthy since it applied; null while healthy. */
  unhealthy_seconds: number | null;
  /** Drops of its connection since it applied. */
  disconnects: number;
}

/**
 * The batch's succeeded agents the gate fails now: unhealthy for `unhealthyAfterSeconds`
 * since they applied (an agent unhealthy before applying counts from its apply), or with
 * more than `maxDisconnects` drops since.
 */
export async function healthGateCandidates(
  db: Db,
  rolloutId: string,
  batch: number,
  gate: { unhealthyAfterSeconds: number; maxDisconnects: number },
): Promise<HealthGateCandidate[]> {
  const { rows } = await db.raw(
    `SELECT * FROM (
       SELECT ra.agent_id, a.health,
              CASE WHEN a.unhealthy_since IS NOT NULL
                   THEN floor(extract(epoch FROM now() - greatest(a.unhealthy_since, ra.finished_at)))::int
              END AS unhealthy_seconds,
              a.disconnects - coalesce(ra.disconnects_at_apply, a.disconnects) AS disconnects
         FROM rollout_agents ra JOIN agents a ON a.id = ra.agent_id
        WHERE ra.rollout_id = ? AND ra.batch = ? AND ra.state = 'succeeded'
     ) c
     WHERE c.unhealthy_seconds >= ? OR c.disconnects > ?`,
    [rolloutId, batch, gate.unhealthyAfterSeconds, gate.maxDisconnects],
  );
  return rows;
}

/** Fails agents that had succeeded, each with its reason (the health gate's verdict); returns those it failed. */
export async function failSucceeded(
  db: Db,
  rolloutId: string,
  failures: Array<{ agentId: string; error: string }>,
): Promise<SettledAgent[]> {
  if (failures.length === 0) return [];
  const { rows } = await db.raw(
    `UPDATE rollout_agents ra SET state = 'failed', error = f.error, finished_at = now()
       FROM unnest(?::uuid[], ?::text[]) AS f(agent_id, error)
      WHERE ra.rollout_id = ? AND ra.agent_id = f.agent_id AND ra.state = 'succeeded'
      RETURNING ra.agent_id, ra.state, ra.error`,
    [failures.map((f) => f.agentId), failures.map((f) => f.error), rolloutId],
  );
  return rows;
}

export async function batchOutcome(
  db: Db,
  rolloutId: string,
  batch: number,
): Promise<Record<AgentRolloutState, number>> {
  const rows: Array<{ state: AgentRolloutState; n: string }> = await db('rollout_agents')
    .where({ rollout_id: rolloutId, batch })
    .groupBy('state')
    .select('state', db.raw('count(*) AS n'));
  const out = { pending: 0, applying: 0, deferred: 0, succeeded: 0, failed: 0, skipped: 0 };
  for (const row of rows) out[row.state] = Number(row.n);
  return out;
}

// ---------------------------------------------------------------------------------------
// Rollback

/**
 * Claims the agents this rollout touched for the rollback, grouped by the configuration
 * version each had before; agents that had none are `skipped` (nothing to restore).
 * Idempotent: agents already claimed are not returned again.
 */
export async function claimRollback(
  db: Db,
  rolloutId: string,
  hash: string,
): Promise<Array<{ configurationId: string; version: number; agentIds: string[] }>> {
  // One statement: the touched agents' rows locked in id order, each claimed (`applying`) or
  // skipped with its reason, the first that holds:
  const rows: Array<{
    agent_id: string;
    rollback_state: 'applying' | 'skipped';
    previous_configuration_id: string | null;
    previous_version: number | null;
  }> = (
    await db.raw(
      `WITH touched AS (
         SELECT ra.agent_id,
                CASE
                  -- an agent a later push moved on from this rollout's configuration is that push's now;
                  WHEN a.id IS NOT NULL AND a.desired_hash IS DISTINCT FROM ? THEN 'a later push replaced this rollout''s configuration'
                  -- a touched agent another rollout has taken since is that rollout's now;
                  WHEN NOT ra.active THEN 'the agent is in another active rollout'
                  -- an agent with nothing before has nothing to go back to.
                  WHEN ra.previous_configuration_id IS NULL OR ra.previous_version IS NULL
                    THEN 'the agent had no configuration before this rollout'
                END AS skipped
           FROM rollout_agents ra LEFT JOIN agents a ON a.id = ra.agent_id
          WHERE ra.rollout_id = ? AND ra.state IN ('applying', 'succeeded', 'failed') AND ra.rollback_state IS NULL
          ORDER BY ra.agent_id
            FOR UPDATE OF ra
       )
       UPDATE rollout_agents ra
          SET rollback_state = CASE WHEN t.skipped IS NULL THEN 'applying' ELSE 'skipped' END,
              rollback_error = t.skipped
         FROM touched t
        WHERE ra.rollout_id = ? AND ra.agent_id = t.agent_id
       RETURNING ra.agent_id, ra.rollback_state, ra.previous_configuration_id, ra.previous_version`,
      [hash, rolloutId, rolloutId],
    )
  ).rows;
  const groups = new Map<string, { configurationId: string; version: number; agentIds: string[] }>();
  for (const row of rows) {
    if (row.rollback_state !== 'applying') continue;
    const key = `${row.previous_configuration_id}:${row.previous_version}`;
    let group = groups.get(key);
    if (!group)
      groups.set(
        key,
        (group = { configurationId: row.previous_configuration_id!, version: row.previous_version!, agentIds: [] }),
      );
    group.agentIds.push(row.agent_id);
  }
  return [...groups.values()];
}

/** Rollback agents whose report on their previous configuration is in. */
export async function settleRollback(
  db: Db,
  rolloutId: string,
): Promise<Array<SettledAgent & { previous: PreviousVersion }>> {
  const rows: Array<SettledAgent & { configuration_id: string; version: number; hash: string | null }> = (
    await db.raw(
      `UPDATE rollout_agents ra
          SET rollback_state = CASE WHEN a.applied_status = 'APPLIED' THEN 'succeeded' ELSE 'failed' END,
              rollback_error = CASE WHEN a.applied_status = 'APPLIED' THEN NULL ELSE coalesce(a.applied_error, 'the agent reported FAILED') END
         FROM agents a
        WHERE ra.rollout_id = ? AND ra.rollback_state = 'applying'
          AND a.id = ra.agent_id AND a.applied_hash = ra.previous_hash AND a.applied_status IN ('APPLIED', 'FAILED')
        RETURNING ra.agent_id, ra.rollback_state AS state, ra.rollback_error AS error,
                  ra.previous_configuration_id AS configuration_id, ra.previous_version AS version,
                  ra.previous_hash AS hash`,
      [rolloutId],
    )
  ).rows;
  return rows.map(({ configuration_id: configurationId, version, hash, ...agent }) => ({
    ...agent,
    previous: { configurationId, version, hash },
  }));
}

/** The agents the rollback still waits for. */
export async function rollbackWaiting(db: Db, rolloutId: string): Promise<string[]> {
  return db('rollout_agents').where({ rollout_id: rolloutId, rollback_state: 'applying' }).pluck('agent_id');
}

/** How many agents the rollback still waits for (each poll: not 100,000 ids a quarter second). */
export async function countRollbackWaiting(db: Db, rolloutId: string): Promise<number> {
  const row = await db('rollout_agents')
    .where({ rollout_id: rolloutId, rollback_state: 'applying' })
    .count({ n: '*' })
    .first();
  return Number(row?.n ?? 0);
}

export async function failRollbackAgents(db: Db, rolloutId: string, agentIds: string[], error: string): Promise<void> {
  if (agentIds.length === 0) return;
  await db('rollout_agents')
    .where({ rollout_id: rolloutId, rollback_state: 'applying' })
    .whereRaw('agent_id = ANY(?::uuid[])', [agentIds])
    .update({ rollback_state: 'failed', rollback_error: error });
}
