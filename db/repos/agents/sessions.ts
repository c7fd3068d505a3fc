import type { Db } from '../../connection';
import type { SettingsState } from './reports';

/**
 * How an agent's connections go: the settings offered to it, and how often it opens a
 * WebSocket session (an agent that reconnects in a loop is answered with a back-off).
 */

/** Remembers the hash (hex) of the connection settings just offered to the agent. */
export async function recordSettingsOffered(db: Db, id: string, hash: string): Promise<void> {
  await db('agents')
    .where({ id })
    .update({ settings_offered_hash: hash } as never);
}

/** The agent's capabilities and what it was offered and reports having (for an offer sent unasked). */
export async function findSettingsState(
  db: Db,
  id: string,
): Promise<{ capabilities: number; settings: SettingsState } | undefined> {
  const row = (await db('agents')
    .select('capabilities', 'settings_offered_hash', 'settings_reported_hash', 'settings_reported_status')
    .where({ id })
    .first()) as
    | {
        capabilities: number;
        settings_offered_hash: string | null;
        settings_reported_hash: string | null;
        settings_reported_status: SettingsState['reportedStatus'];
      }
    | undefined;
  if (!row) return undefined;
  return {
    capabilities: Number(row.capabilities),
    settings: {
      offered: row.settings_offered_hash,
      reported: row.settings_reported_hash,
      reportedStatus: row.settings_reported_status,
    },
  };
}

export interface SessionRule {
  /** More sessions than this within the window is flapping. */
  sessions: number;
  windowSeconds: number;
  backoffSeconds: number;
}

export interface SessionStart {
  /** The agent is in a back-off until then (it may not start a session). */
  backoffUntil: Date | null;
  /** This session started the back-off (once per episode: the moment to tell someone). */
  backoffStarted: boolean;
}

/**
 * Counts a new WebSocket session of the agent in its window (a window older than
 * `windowSeconds` starts again at one); one past `sessions` starts a back-off of
 * `backoffSeconds` and empties the window. A session started during a back-off is not
 * counted (it is refused).
 * Undefined: no such agent.
 */
export async function countSessionStart(db: Db, id: string, rule: SessionRule): Promise<SessionStart | undefined> {
  const { rows } = await db.raw(
    `WITH b AS (
       SELECT id, backoff_until > now() AS backing_off,
              sessions_window_started_at IS NULL
                OR sessions_window_started_at < now() - make_interval(secs => :window) AS new_window
         FROM agents WHERE id = :id FOR NO KEY UPDATE
     ), c AS (
       SELECT b.*, CASE WHEN b.new_window THEN 1 ELSE a.sessions_in_window + 1 END AS sessions
         FROM b JOIN agents a ON a.id = b.id
     )
     UPDATE agents a SET
       -- A back-off starts a new window: after it, the agent starts from one again.
       sessions_window_started_at = CASE WHEN c.sessions > :limit THEN NULL
                                         WHEN c.new_window THEN now() ELSE a.sessions_window_started_at END,
       sessions_in_window = CASE WHEN c.sessions > :limit THEN 0 ELSE c.sessions END,
       backoff_until = CASE WHEN c.sessions > :limit THEN now() + make_interval(secs => :backoff) ELSE a.backoff_until END
       FROM c WHERE a.id = c.id AND c.backing_off IS NOT TRUE
     RETURNING a.backoff_until, c.sessions > :limit AS started`,
    { id, window: rule.windowSeconds, limit: rule.sessions, backoff: rule.backoffSeconds },
  );
  const row = (rows as Array<{ backoff_until: Date | null; started: boolean }>)[0];
  if (row) return { backoffUntil: row.started ? row.backoff_until : null, backoffStarted: row.started };
  // No row updated: no such agent, or one already backing off.
  const current = await db('agents').where({ id }).first('backoff_until');
  if (!current) return undefined;
  return { backoffUntil: (current as { backoff_until: Date | null }).backoff_until, backoffStarted: false };
}

/**
 * countSessionStart for many agents at once (ids unique), in one statement that locks their
 * rows in id order (as report batches do). Per id: as countSessionStart; absent: no such agent.
 */
export async function countSessionStarts(db: Db, ids: string[], rule: SessionRule): Promise<Map<string, SessionStart>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.raw(
    `WITH b AS (
       SELECT id, backoff_until, sessions_in_window, backoff_until > now() AS backing_off,
              sessions_window_started_at IS NULL
                OR sessions_window_started_at < now() - make_interval(secs => :window) AS new_window
         FROM agents WHERE id = ANY(CAST(:ids AS uuid[])) ORDER BY id FOR NO KEY UPDATE
     ), c AS (
       SELECT b.*, CASE WHEN b.new_window THEN 1 ELSE b.sessions_in_window + 1 END AS sessions FROM b
     ), u AS (
       UPDATE agents a SET
         sessions_window_started_at = CASE WHEN c.sessions > :limit THEN NULL
                                           WHEN c.new_window THEN now() ELSE a.sessions_window_started_at END,
         sessions_in_window = CASE WHEN c.sessions > :limit THEN 0 ELSE c.sessions END,
         backoff_until = CASE WHEN c.sessions > :limit THEN now() + make_interval(secs => :backoff) ELSE a.backoff_until END
         FROM c WHERE a.id = c.id AND c.backing_off IS NOT TRUE
       RETURNING a.id, a.backoff_until, c.sessions > :limit AS started
     )
     SELECT b.id, CASE WHEN u.id IS NULL THEN b.backoff_until WHEN u.started THEN u.backoff_until END AS backoff_until,
            coalesce(u.started, false) AS started
       FROM b LEFT JOIN u ON u.id = b.id`,
    { ids, window: rule.windowSeconds, limit: rule.sessions, backoff: rule.backoffSeconds },
  );
  const counted = rows as Array<{ id: string; backoff_until: Date | null; started: boolean }>;
  return new Map(counted.map((row) => [row.id, { backoffUntil: row.backoff_until, backoffStarted: row.started }]));
}

/**
 * Marks offline, at once, the agents of WebSocket sessions that closed (`countDisconnects`:
 * each agent's own close, counted in its `disconnects`) or that a replica is closing as it
 * stops (not counted: the agent did not go): each only while that session still speaks for
 * it (one that reconnected elsewhere stays online). Rows are locked in id order, as report
 * batches lock theirs. Returns the agents that went offline.
 */
export async function markSessionsOffline(
  db: Db,
  sessions: Array<{ agentId: string; sessionId: string }>,
  { countDisconnects = false } = {},
): Promise<Array<{ id: string; tenantId: string }>> {
  if (sessions.length === 0) return [];
  const { rows } = await db.raw(
    `UPDATE agents SET status = 'offline', updated_at = now()${countDisconnects ? ', disconnects = disconnects + 1' : ''}
      WHERE id IN (SELECT a.id FROM agents a
                     JOIN unnest(?::uuid[], ?::uuid[]) AS s(agent_id, session_id)
                       ON a.id = s.agent_id AND a.session_id = s.session_id
                    WHERE a.status IN ('online', 'enrolling')
                    ORDER BY a.id FOR NO KEY UPDATE)
      RETURNING id, tenant_id`,
    [sessions.map((s) => s.agentId), sessions.map((s) => s.sessionId)],
  );
  return (rows as Array<{ id: string; tenant_id: string }>).map((row) => ({ id: row.id, tenantId: row.tenant_id }));
}
