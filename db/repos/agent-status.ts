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

/**
 * Applies one report and stamps `last_seen_at`. A `remote_config_status` for the desired
 * configuration's hash also records which configuration version is applied. Run it in a
 * transaction: the row is locked between the two statements. Undefined: no such agent.
 */
export async function applyAgentReport(db: Db, id: string, report: AgentReport): Promise<ReportedAgent | undefined> {
  const before = await db('agents')
    .select('status', 'tenant_id', 'desired_configuration_id', 'desired_version', 'desired_hash', 'applied_hash', 'applied_status')
    .where({ id })
    .forNoKeyUpdate()
    .first();
  if (!before) return undefined;
  const changes: Record<string, unknown> = { last_seen_at: db.fn.now(), updated_at: db.fn.now() };
  // The row is locked now; an operator's decision taken since the agent was admitted wins.
  if (before.status === 'revoked' || before.status === 'handed-over') {
    await db('agents').where({ id }).update(changes as never);
    return { previous: before.status, tenantId: before.tenant_id, desired: null, applied: { hash: null, status: null }, settled: false, cutOff: true };
  }
  const held = report.status === 'pending-approval';
  if (report.status && held === (before.status === 'pending-approval')) changes.status = report.status;
  if (report.description) changes.description = JSON.stringify(report.description);
  if (report.capabilities !== undefined) changes.capabilities = report.capabilities.toString();
  if (report.health !== undefined) changes.health = JSON.stringify(report.health);
  if (report.effectiveConfigHash !== undefined) changes.effective_config_hash = report.effectiveConfigHash;
  const applied = { hash: before.applied_hash as string | null, status: before.applied_status as AppliedStatus | null };
  let settled = false;
  if (report.applied) {
    const forDesired = before.desired_hash !== null && report.applied.hash === before.desired_hash;
    changes.applied_hash = report.applied.hash;
    changes.applied_status = report.applied.status;
    changes.applied_error = report.applied.error;
    if (forDesired) {
      changes.applied_configuration_id = before.desired_configuration_id;
      changes.applied_version = before.desired_version;
    } else if (report.applied.hash !== before.applied_hash) {
      // Some other configuration than the one we know of: we cannot name it.
      changes.applied_configuration_id = null;
      changes.applied_version = null;
    }
    const final = report.applied.status === 'APPLIED' || report.applied.status === 'FAILED';
    settled = forDesired && final && (before.applied_hash !== report.applied.hash || before.applied_status !== report.applied.status);
    applied.hash = report.applied.hash;
    applied.status = report.applied.status;
  }
  if (report.nameIfEmpty) changes.name = db.raw("CASE WHEN name = '' THEN ? ELSE name END", [report.nameIfEmpty]);
  await db('agents').where({ id }).update(changes as never);
  return {
    previous: before.status,
    tenantId: before.tenant_id,
    desired: before.desired_hash ? { configurationId: before.desired_configuration_id, version: before.desired_version, hash: before.desired_hash } : null,
    applied,
    settled,
    cutOff: false,
  };
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
