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

/**
 * Applies one report and stamps `last_seen_at`; returns the status the row had before, so
 * the caller knows whether this was a transition (for events). Run it in a transaction:
 * the row is locked between the two statements. Undefined: no such agent.
 */
export async function applyAgentReport(db: Db, id: string, report: AgentReport): Promise<{ previous: AgentStatus; tenantId: string } | undefined> {
  const before = await db('agents').select('status', 'tenant_id').where({ id }).forNoKeyUpdate().first();
  if (!before) return undefined;
  const changes: Record<string, unknown> = { last_seen_at: db.fn.now(), updated_at: db.fn.now() };
  if (report.status) changes.status = report.status;
  if (report.description) changes.description = JSON.stringify(report.description);
  if (report.capabilities !== undefined) changes.capabilities = report.capabilities.toString();
  if (report.health !== undefined) changes.health = JSON.stringify(report.health);
  if (report.effectiveConfigHash !== undefined) changes.effective_config_hash = report.effectiveConfigHash;
  if (report.applied) {
    changes.applied_hash = report.applied.hash;
    changes.applied_status = report.applied.status;
    changes.applied_error = report.applied.error;
  }
  if (report.nameIfEmpty) changes.name = db.raw("CASE WHEN name = '' THEN ? ELSE name END", [report.nameIfEmpty]);
  await db('agents').where({ id }).update(changes as never);
  return { previous: before.status, tenantId: before.tenant_id };
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
