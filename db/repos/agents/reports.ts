import type { Knex } from 'knex';
import type { Db } from '../../connection';
import type { AgentStatus, AppliedStatus } from './inventory';

/**
 * What agents tell the gateway (AgentToServer messages, pings, goodbyes, silence) as it
 * lands on their rows.
 */

/** The columns an AgentToServer message may change; absent keys are left alone. */
export interface AgentReport {
  status?: AgentStatus;
  /** The WebSocket session now speaking for the agent; null: a message over HTTP. */
  session?: string | null;
  /** Set only when the agent has no name yet. */
  nameIfEmpty?: string;
  description?: Record<string, unknown>;
  capabilities?: bigint;
  health?: unknown;
  effectiveConfigHash?: string | null;
  applied?: { hash: string | null; status: AppliedStatus | null; error: string | null };
  /** `connection_settings_status`: the hash of the settings the agent has (hex) and how it fared with them. */
  settings?: { hash: string | null; status: AppliedStatus | null };
}

/** What the gateway offered in `connection_settings` and what the agent says it has (hex hashes). */
export interface SettingsState {
  offered: string | null;
  reported: string | null;
  reportedStatus: AppliedStatus | null;
}

/** What a report leaves on the row that the gateway needs for its reply. */
export interface ReportedAgent {
  /** The status before this report (for connect events). */
  previous: AgentStatus;
  tenantId: string;
  desired: { configurationId: string; version: number; hash: string } | null;
  applied: { hash: string | null; status: AppliedStatus | null };
  /** The capabilities the agent reported (this message's when it has them). */
  capabilities: number;
  settings: SettingsState;
  /** The agent was revoked (or handed over) since it was admitted: nothing but `last_seen_at` was written. */
  cutOff: boolean;
}

/** The row as it was before a report, as the statement below returns it. */
interface BeforeReport {
  status: AgentStatus;
  tenant_id: string;
  desired_configuration_id: string | null;
  desired_version: number | null;
  desired_hash: string | null;
  applied_hash: string | null;
  applied_status: AppliedStatus | null;
  capabilities: number;
  settings_offered_hash: string | null;
  settings_reported_hash: string | null;
  settings_reported_status: AppliedStatus | null;
  updated: boolean;
}

/** The columns both report statements return as the row was before the report. */
const BEFORE_COLUMNS = [
  'id',
  'status',
  'tenant_id',
  'desired_configuration_id',
  'desired_version',
  'desired_hash',
  'applied_hash',
  'applied_status',
  'capabilities',
  'settings_offered_hash',
  'settings_reported_hash',
  'settings_reported_status',
];

/**
 * `unhealthy_since` after a report carrying health `health` (SQL): unchanged while unhealthy,
 * now when it turns so, null when healthy. ComponentHealth as JSON leaves `healthy: false` out.
 */
const UNHEALTHY_SINCE = (health: string) =>
  `CASE WHEN coalesce((${health} ->> 'healthy')::boolean, false) THEN NULL ELSE coalesce(a.unhealthy_since, now()) END`;

/**
 * One statement that locks the agent row, applies the report and returns the row as it was
 * before. (Routine reports of online agents go through applyReportsIfOnline, many at once.)
 *
 * An operator's decision taken since the agent was admitted wins: a revoked or handed-over
 * agent's row is left alone (cutOff), and a report never moves an agent into or out of
 * `pending-approval` behind an approval or a rejection.
 */
function reportStatement(db: Db, id: string, report: AgentReport) {
  const sets = ['last_seen_at = now()', 'updated_at = now()'];
  const bindings: Knex.Value[] = [id];
  const set = (sql: string, ...values: Knex.Value[]) => {
    sets.push(sql);
    bindings.push(...values);
  };
  if (report.status) {
    const held = report.status === 'pending-approval';
    set(
      `status = CASE WHEN ?::boolean = (b.status = 'pending-approval') THEN ? ELSE a.status END`,
      held,
      report.status,
    );
  }
  if (report.session !== undefined) set('session_id = ?', report.session);
  if (report.description) set('description = ?::jsonb', JSON.stringify(report.description));
  if (report.capabilities !== undefined) set('capabilities = ?', report.capabilities.toString());
  if (report.health !== undefined) {
    set('health = ?::jsonb', JSON.stringify(report.health));
    set(`unhealthy_since = ${UNHEALTHY_SINCE('?::jsonb')}`, JSON.stringify(report.health));
  }
  if (report.effectiveConfigHash !== undefined) set('effective_config_hash = ?', report.effectiveConfigHash);
  if (report.applied) {
    const { hash, status, error } = report.applied;
    set('applied_hash = ?, applied_status = ?, applied_error = ?', hash, status, error);
    // The desired configuration's hash names the version applied; another hash we cannot name.
    for (const column of ['configuration_id', 'version']) {
      set(
        `applied_${column} = CASE WHEN b.desired_hash IS NOT NULL AND b.desired_hash = ? THEN b.desired_${column}
                                 WHEN b.applied_hash IS DISTINCT FROM ? THEN NULL ELSE a.applied_${column} END`,
        hash,
        hash,
      );
    }
  }
  if (report.settings)
    set('settings_reported_hash = ?, settings_reported_status = ?', report.settings.hash, report.settings.status);
  if (report.nameIfEmpty) set(`name = CASE WHEN a.name = '' THEN ? ELSE a.name END`, report.nameIfEmpty);
  return db.raw(
    `WITH b AS (
       SELECT ${BEFORE_COLUMNS.join(', ')} FROM agents WHERE id = ? FOR NO KEY UPDATE
     ), u AS (
       UPDATE agents a SET ${sets.join(', ')}
         FROM b WHERE a.id = b.id AND b.status NOT IN ('revoked', 'handed-over')
       RETURNING a.id
     )
     SELECT b.*, EXISTS (SELECT 1 FROM u) AS updated FROM b`,
    bindings,
  );
}

function reported(before: BeforeReport, report: AgentReport): ReportedAgent {
  const cutOff = before.status === 'revoked' || before.status === 'handed-over';
  const applied = { hash: before.applied_hash, status: before.applied_status };
  if (report.applied && !cutOff) {
    applied.hash = report.applied.hash;
    applied.status = report.applied.status;
  }
  const desired =
    before.desired_hash && !cutOff
      ? {
          configurationId: before.desired_configuration_id!,
          version: before.desired_version!,
          hash: before.desired_hash,
        }
      : null;
  const settings: SettingsState = {
    offered: before.settings_offered_hash,
    reported: report.settings && !cutOff ? report.settings.hash : before.settings_reported_hash,
    reportedStatus: report.settings && !cutOff ? report.settings.status : before.settings_reported_status,
  };
  const capabilities = report.capabilities !== undefined ? Number(report.capabilities) : before.capabilities;
  return { previous: before.status, tenantId: before.tenant_id, desired, applied, capabilities, settings, cutOff };
}

/**
 * Applies one report and stamps `last_seen_at`; returns the row as it was (for events) and
 * what the reply needs. Undefined: no such agent.
 */
export async function applyAgentReport(db: Db, id: string, report: AgentReport): Promise<ReportedAgent | undefined> {
  const { rows } = await reportStatement(db, id, report);
  const before = rows[0] as BeforeReport | undefined;
  return before && reported(before, report);
}

/** One routine report in a batch (see applyReportsIfOnline), with its row serialised once. */
export interface BatchedReport {
  id: string;
  report: AgentReport;
  /** The report's row of the statement's input, as JSON (`batchedReport` makes it). */
  row: string;
}

/** Serialises a report for a batch; `row.length` is what it adds to the statement's input. */
export function batchedReport(id: string, report: AgentReport): BatchedReport {
  const row = JSON.stringify({
    id,
    session_id: report.session ?? null,
    has_description: report.description !== undefined,
    description: report.description ?? null,
    capabilities: report.capabilities?.toString() ?? null,
    has_health: report.health !== undefined,
    health: report.health ?? null,
    has_effective: report.effectiveConfigHash !== undefined,
    effective_config_hash: report.effectiveConfigHash ?? null,
    has_applied: report.applied !== undefined,
    applied_hash: report.applied?.hash ?? null,
    applied_status: report.applied?.status ?? null,
    applied_error: report.applied?.error ?? null,
    name_if_empty: report.nameIfEmpty ?? null,
  });
  return { id, report, row };
}

/** The input rows of a batch (batchedReport's JSON, bound at `placeholder`), as a relation. */
const batchInput = (placeholder: string) => `jsonb_to_recordset(${placeholder}::jsonb) AS x(
      id uuid, session_id uuid, has_description boolean, description jsonb, capabilities bigint, has_health boolean,
      health jsonb, has_effective boolean, effective_config_hash text, has_applied boolean, applied_hash text,
      applied_status text, applied_error text, name_if_empty text)`;

/** What a batched report writes (`i` the input row, `b` the row before, `a` the row). */
const BATCH_SETS = `last_seen_at = now(),
      updated_at = now(),
      description = CASE WHEN i.has_description THEN i.description ELSE a.description END,
      capabilities = coalesce(i.capabilities, a.capabilities),
      health = CASE WHEN i.has_health THEN i.health ELSE a.health END,
      unhealthy_since = CASE WHEN i.has_health THEN ${UNHEALTHY_SINCE('i.health')} ELSE a.unhealthy_since END,
      effective_config_hash = CASE WHEN i.has_effective THEN i.effective_config_hash ELSE a.effective_config_hash END,
      applied_hash = CASE WHEN i.has_applied THEN i.applied_hash ELSE a.applied_hash END,
      applied_status = CASE WHEN i.has_applied THEN i.applied_status ELSE a.applied_status END,
      applied_error = CASE WHEN i.has_applied THEN i.applied_error ELSE a.applied_error END,
      applied_configuration_id = CASE
        WHEN NOT i.has_applied THEN a.applied_configuration_id
        WHEN b.desired_hash IS NOT NULL AND b.desired_hash = i.applied_hash THEN b.desired_configuration_id
        WHEN b.applied_hash IS DISTINCT FROM i.applied_hash THEN NULL
        ELSE a.applied_configuration_id END,
      applied_version = CASE
        WHEN NOT i.has_applied THEN a.applied_version
        WHEN b.desired_hash IS NOT NULL AND b.desired_hash = i.applied_hash THEN b.desired_version
        WHEN b.applied_hash IS DISTINCT FROM i.applied_hash THEN NULL
        ELSE a.applied_version END,
      name = CASE WHEN a.name = '' AND i.name_if_empty IS NOT NULL THEN i.name_if_empty ELSE a.name END`;

/**
 * One statement for the reports of many agents (ids unique within the batch), locking the
 * rows in id order so concurrent batches cannot deadlock; `sets` are written besides
 * BATCH_SETS, to the rows `where` admits. Returns each row as it was before, and whether it
 * was written. The input is bound at `placeholder` ($1 for a prepared statement, ? for knex).
 */
const batchSql = (placeholder: string, sets: string, where: string) => `WITH i AS (
    SELECT * FROM ${batchInput(placeholder)}
  ), b AS (
    SELECT ${BEFORE_COLUMNS.map((column) => `a.${column}`).join(', ')}
      FROM agents a WHERE a.id IN (SELECT id FROM i) ORDER BY a.id FOR NO KEY UPDATE
  ), u AS (
    UPDATE agents a SET ${sets}${BATCH_SETS}
      FROM i JOIN b ON b.id = i.id
     WHERE a.id = i.id AND ${where}
    RETURNING a.id
  )
  SELECT b.*, EXISTS (SELECT 1 FROM u WHERE u.id = b.id) AS updated FROM b`;

/**
 * The hot path for many agents at once: the routine reports of online agents. An agent that
 * was not online is left alone (the caller takes the transactional path).
 */
const REPORTS_SQL = batchSql('$1', '', `b.status = 'online'`);

/**
 * The first message of many WebSocket sessions at once (a reconnect storm): as
 * reportStatement with the status online (a held agent stays held) and the session that now
 * speaks for the agent; a revoked or handed-over agent's row is left alone (cutOff).
 */
const SESSION_STARTS_SQL = batchSql(
  '?',
  `status = CASE WHEN b.status = 'pending-approval' THEN a.status ELSE 'online' END,
      session_id = i.session_id,
      `,
  `b.status NOT IN ('revoked', 'handed-over')`,
);

/**
 * Runs a statement by name on a pooled connection, so Postgres parses and plans it once per
 * connection: on the hot path the planning of this statement cost more than its execution.
 */
async function runPrepared<Row>(db: Db, name: string, text: string, values: unknown[]): Promise<Row[]> {
  const client = (db as Knex).client as {
    acquireConnection(): Promise<PgConnection>;
    releaseConnection(connection: PgConnection): Promise<void>;
  };
  const connection = await client.acquireConnection();
  try {
    return (await connection.query({ name, text, values })).rows as Row[];
  } finally {
    await client.releaseConnection(connection);
  }
}

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Applies the routine reports of online agents in one statement. Returns, per id, the row as
 * it was when the report was applied, or undefined for an agent that was not online.
 */
export async function applyReportsIfOnline(
  db: Db,
  batch: BatchedReport[],
): Promise<Map<string, ReportedAgent | undefined>> {
  const input = `[${batch.map((entry) => entry.row).join(',')}]`;
  const rows = await runPrepared<BeforeReport & { id: string }>(db, 'fleet_agent_reports', REPORTS_SQL, [input]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return new Map(
    batch.map(({ id, report }) => {
      const before = byId.get(id);
      return [id, before?.updated ? reported(before, report) : undefined];
    }),
  );
}

/**
 * Applies the first messages of WebSocket sessions (each report's `session` set, no
 * `settings`) in one statement, as applyAgentReport does one. Returns, per id, the row as it
 * was (cutOff when the agent was revoked or handed over), or undefined: no such agent.
 * `db` is the caller's transaction (the session starts' events go with it).
 */
export async function applySessionStarts(
  db: Db,
  batch: BatchedReport[],
): Promise<Map<string, ReportedAgent | undefined>> {
  if (batch.length === 0) return new Map();
  const input = `[${batch.map((entry) => entry.row).join(',')}]`;
  const { rows } = await db.raw<{ rows: Array<BeforeReport & { id: string }> }>(SESSION_STARTS_SQL, [input]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return new Map(
    batch.map(({ id, report }) => {
      const before = byId.get(id);
      return [id, before && reported(before, report)];
    }),
  );
}

/**
 * Stamps `last_seen_at` of agents whose WebSocket answered a ping (a silent agent is still
 * there), unless it is younger than `freshSeconds`: an agent that heartbeats was stamped by
 * its own report, and writing its row again would double the fleet's steady writes.
 */
export async function touchAgents(db: Db, ids: string[], freshSeconds: number): Promise<void> {
  // Rows an agent's own report holds are skipped (that report stamps them), and the rest are
  // locked in id order, as report batches lock theirs: the two never deadlock. Only the rows
  // selected are locked, so a fresh row is neither locked nor written.
  for (let i = 0; i < ids.length; i += 5000) {
    await db.raw(
      `UPDATE agents SET last_seen_at = now()
        WHERE id IN (SELECT id FROM agents
                      WHERE id = ANY(?::uuid[]) AND status = 'online' AND last_seen_at < now() - make_interval(secs => ?)
                      ORDER BY id FOR NO KEY UPDATE SKIP LOCKED)`,
      [ids.slice(i, i + 5000), freshSeconds],
    );
  }
}

/** Online agents not heard of for `silenceSeconds` become offline; returns them. */
export async function markSilentAgentsOffline(
  db: Db,
  silenceSeconds: number,
): Promise<Array<{ id: string; tenantId: string }>> {
  // A row locked right now is an agent being heard from: skipped (and locks taken in id order).
  const { rows } = await db.raw(
    `UPDATE agents SET status = 'offline', updated_at = now(), disconnects = disconnects + 1
      WHERE id IN (SELECT id FROM agents WHERE status = 'online' AND last_seen_at < now() - make_interval(secs => ?)
                    ORDER BY id FOR NO KEY UPDATE SKIP LOCKED)
        AND status = 'online'
      RETURNING id, tenant_id`,
    [silenceSeconds],
  );
  return (rows as Array<{ id: string; tenant_id: string }>).map((row) => ({ id: row.id, tenantId: row.tenant_id }));
}

/**
 * Marks an agent offline (it said goodbye, or its socket closed); undefined when it already
 * was. With `session`, only while that WebSocket session still speaks for the agent: one
 * that reconnected elsewhere meanwhile stays online.
 */
export async function markAgentOffline(
  db: Db,
  id: string,
  session?: string,
): Promise<{ tenantId: string } | undefined> {
  const query = db('agents').where({ id }).whereIn('status', ['online', 'enrolling']);
  if (session) query.where({ session_id: session });
  const [row] = await query
    .update({ status: 'offline', updated_at: db.fn.now(), disconnects: db.raw('disconnects + 1') } as never)
    .returning(['tenant_id']);
  return row && { tenantId: row.tenant_id };
}
