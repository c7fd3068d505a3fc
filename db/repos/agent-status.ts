import type { Knex } from 'knex';
import type { Db } from '../connection';
import type { AgentStatus, AppliedStatus } from './agents';
import type { BootstrapTokenRow } from './tokens';

/** What the agent gateway needs of an agent row to admit a connection. */
export interface AgentBinding {
  id: string;
  tenant_id: string;
  group_id: string;
  name: string;
  status: AgentStatus;
  enrolled_with_token_id: string | null;
  certificate_serial: string | null;
  certificate_not_after: Date | null;
  certificate_revoked_at: Date | null;
}

/** A bootstrap token by hash, whatever its state (the gateway decides what each state admits). */
export async function findBootstrapTokenByHash(db: Db, hash: Buffer): Promise<BootstrapTokenRow | undefined> {
  return db<BootstrapTokenRow>('bootstrap_tokens').where({ token_hash: hash }).first();
}

export async function findBootstrapTokenById(db: Db, id: string): Promise<BootstrapTokenRow | undefined> {
  return db<BootstrapTokenRow>('bootstrap_tokens').where({ id }).first();
}

/** Whether any agent authenticates with this token (so an expired or spent token may still admit it). */
export async function tokenHasBoundAgents(db: Db, tokenId: string): Promise<boolean> {
  const row = await db('agents').select('id').where({ enrolled_with_token_id: tokenId }).first();
  return row !== undefined;
}

/** Locks the agent row (any tenant: the instance uid is global) for the rest of the transaction. */
export async function lockAgentBinding(db: Db, id: string): Promise<AgentBinding | undefined> {
  return db('agents')
    .select('id', 'tenant_id', 'group_id', 'name', 'status', 'enrolled_with_token_id', 'certificate_serial', 'certificate_not_after', 'certificate_revoked_at')
    .where({ id })
    .forNoKeyUpdate()
    .first();
}

/**
 * Can the agent still prove who it is: a live certificate, or the token it is bound to,
 * unrevoked? Then nobody else may enroll under its uid.
 */
export async function hasUsableCredential(db: Db, agent: AgentBinding): Promise<boolean> {
  const liveCertificate =
    agent.certificate_serial !== null &&
    agent.certificate_revoked_at === null &&
    agent.certificate_not_after !== null &&
    agent.certificate_not_after.getTime() > Date.now();
  if (liveCertificate) return true;
  if (!agent.enrolled_with_token_id) return false;
  const token = await findBootstrapTokenById(db, agent.enrolled_with_token_id);
  return token !== undefined && token.revoked_at === null;
}

/** Re-enrolment of a known agent with another token of its tenant: it now authenticates with that one. */
export async function rebindAgentToken(db: Db, id: string, tokenId: string): Promise<void> {
  await db('agents')
    .where({ id })
    .update({ enrolled_with_token_id: tokenId, status: 'enrolling', row_version: db.raw('row_version + 1'), updated_at: db.fn.now() } as never);
}

/** The columns an AgentToServer message may change; absent keys are left alone. */
export interface AgentReport {
  status?: AgentStatus;
  /** Set only when the agent has no name yet. */
  nameIfEmpty?: string;
  description?: Record<string, unknown>;
  capabilities?: bigint;
  health?: unknown;
  effectiveConfigHash?: string | null;
  applied?: { hash: string | null; status: AppliedStatus | null; error: string | null };
}

/** What a report leaves on the row that the gateway needs for its reply. */
export interface ReportedAgent {
  /** The status before this report (for connect events). */
  previous: AgentStatus;
  tenantId: string;
  desired: { configurationId: string; version: number; hash: string } | null;
  applied: { hash: string | null; status: AppliedStatus | null };
  /** The report settled the desired configuration (APPLIED or FAILED for its hash), just now. */
  settled: boolean;
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
  updated: boolean;
}

/**
 * One statement that locks the agent row, applies the report and returns the row as it was
 * before: one round trip per agent message. `onlyIfOnline`: change nothing unless the agent
 * is online already (the hot path of heartbeats and config reports; a transition to online
 * needs its event, so the caller then takes the transactional path).
 *
 * An operator's decision taken since the agent was admitted wins: a revoked or handed-over
 * agent's row is left alone (cutOff), and a report never moves an agent into or out of
 * `pending-approval` behind an approval or a rejection.
 */
function reportStatement(db: Db, id: string, report: AgentReport, options: { onlyIfOnline: boolean }) {
  const sets = ['last_seen_at = now()', 'updated_at = now()'];
  const bindings: Knex.Value[] = [id];
  const set = (sql: string, ...values: Knex.Value[]) => {
    sets.push(sql);
    bindings.push(...values);
  };
  if (report.status) {
    const held = report.status === 'pending-approval';
    set(`status = CASE WHEN ?::boolean = (b.status = 'pending-approval') THEN ? ELSE a.status END`, held, report.status);
  }
  if (report.description) set('description = ?::jsonb', JSON.stringify(report.description));
  if (report.capabilities !== undefined) set('capabilities = ?', report.capabilities.toString());
  if (report.health !== undefined) set('health = ?::jsonb', JSON.stringify(report.health));
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
  if (report.nameIfEmpty) set(`name = CASE WHEN a.name = '' THEN ? ELSE a.name END`, report.nameIfEmpty);
  const onlineOnly = options.onlyIfOnline ? `AND b.status = 'online'` : '';
  return db.raw(
    `WITH b AS (
       SELECT id, status, tenant_id, desired_configuration_id, desired_version, desired_hash, applied_hash, applied_status
         FROM agents WHERE id = ? FOR NO KEY UPDATE
     ), u AS (
       UPDATE agents a SET ${sets.join(', ')}
         FROM b WHERE a.id = b.id AND b.status NOT IN ('revoked', 'handed-over') ${onlineOnly}
       RETURNING a.id
     )
     SELECT b.*, EXISTS (SELECT 1 FROM u) AS updated FROM b`,
    bindings,
  );
}

function reported(before: BeforeReport, report: AgentReport): ReportedAgent {
  const cutOff = before.status === 'revoked' || before.status === 'handed-over';
  const applied = { hash: before.applied_hash, status: before.applied_status };
  let settled = false;
  if (report.applied && !cutOff) {
    const forDesired = before.desired_hash !== null && report.applied.hash === before.desired_hash;
    const final = report.applied.status === 'APPLIED' || report.applied.status === 'FAILED';
    settled = forDesired && final && (before.applied_hash !== report.applied.hash || before.applied_status !== report.applied.status);
    applied.hash = report.applied.hash;
    applied.status = report.applied.status;
  }
  const desired =
    before.desired_hash && !cutOff
      ? { configurationId: before.desired_configuration_id!, version: before.desired_version!, hash: before.desired_hash }
      : null;
  return { previous: before.status, tenantId: before.tenant_id, desired, applied, settled, cutOff };
}

/**
 * Applies one report and stamps `last_seen_at`; returns the row as it was (for events) and
 * what the reply needs. Undefined: no such agent.
 */
export async function applyAgentReport(db: Db, id: string, report: AgentReport): Promise<ReportedAgent | undefined> {
  const { rows } = await reportStatement(db, id, report, { onlyIfOnline: false });
  const before = rows[0] as BeforeReport | undefined;
  return before && reported(before, report);
}

/** The hot path: applies the report only if the agent is online (no transition, no event); undefined otherwise. */
export async function applyReportIfOnline(db: Db, id: string, report: AgentReport): Promise<ReportedAgent | undefined> {
  const { rows } = await reportStatement(db, id, report, { onlyIfOnline: true });
  const before = rows[0] as BeforeReport | undefined;
  return before?.updated ? reported(before, report) : undefined;
}

/** The desired configuration of these agents (for a push notification: one query for the batch). */
export async function findDesired(db: Db, ids: string[]): Promise<Array<{ id: string; configurationId: string; version: number; hash: string }>> {
  const rows: Array<{ id: string; desired_configuration_id: string; desired_version: number; desired_hash: string }> = await db('agents')
    .select('id', 'desired_configuration_id', 'desired_version', 'desired_hash')
    .whereIn('id', ids)
    .whereNotNull('desired_hash');
  return rows.map((row) => ({ id: row.id, configurationId: row.desired_configuration_id, version: row.desired_version, hash: row.desired_hash }));
}

/** Stamps `last_seen_at` of agents whose WebSocket answered a ping (a silent agent is still there). */
export async function touchAgents(db: Db, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 5000) {
    await db('agents').whereIn('id', ids.slice(i, i + 5000)).where({ status: 'online' }).update({ last_seen_at: db.fn.now() } as never);
  }
}

/** Online agents not heard of for `silenceSeconds` become offline; returns them. */
export async function markSilentAgentsOffline(db: Db, silenceSeconds: number): Promise<Array<{ id: string; tenantId: string }>> {
  const rows: Array<{ id: string; tenant_id: string }> = await db('agents')
    .where({ status: 'online' })
    .where('last_seen_at', '<', db.raw(`now() - make_interval(secs => ?)`, [silenceSeconds]))
    .update({ status: 'offline', updated_at: db.fn.now() } as never)
    .returning(['id', 'tenant_id']);
  return rows.map((row) => ({ id: row.id, tenantId: row.tenant_id }));
}

/** Agents waiting for an operator's approval, installation-wide (a cap against floods). */
export async function countPendingAgents(db: Db): Promise<number> {
  const [row] = await db('agents').where({ status: 'pending-approval' }).count<Array<{ count: string }>>('* as count');
  return Number(row?.count ?? 0);
}

/** Marks an agent offline (its socket closed, or it said goodbye); false when it already was. */
export async function markAgentOffline(db: Db, id: string): Promise<{ tenantId: string } | undefined> {
  const [row] = await db('agents')
    .where({ id })
    .whereIn('status', ['online', 'enrolling'])
    .update({ status: 'offline', updated_at: db.fn.now() } as never)
    .returning(['tenant_id']);
  return row && { tenantId: row.tenant_id };
}

/**
 * Cuts agents off on every api replica: each agent listener LISTENs here and closes the
 * live sessions the payload names. Sent inside the caller's transaction, so it is delivered
 * at commit (and not at all on rollback).
 */
export const AGENT_CUTOFF_CHANNEL = 'fleet_agent_cutoff';

export type AgentCutoff =
  | { action: 'revoke' | 'reject' | 'approve'; agentId: string }
  | { action: 'token-revoked'; tokenId: string };

export async function notifyAgentCutoff(db: Db, cutoff: AgentCutoff): Promise<void> {
  await db.raw('SELECT pg_notify(?, ?)', [AGENT_CUTOFF_CHANNEL, JSON.stringify(cutoff)]);
}
