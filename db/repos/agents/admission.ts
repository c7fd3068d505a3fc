import type { Db } from '../../connection';
import { findBootstrapTokenById } from '../bootstrap-tokens';
import type { AgentStatus } from './inventory';

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
  /** First connection with one of our certificates since the agent (re-)enrolled. */
  certificate_used_at: Date | null;
}

/** Whether any agent authenticates with this token (so an expired or spent token may still admit it). */
export async function tokenHasBoundAgents(db: Db, tokenId: string): Promise<boolean> {
  const row = await db('agents').select('id').where({ enrolled_with_token_id: tokenId }).first();
  return row !== undefined;
}

/** Locks the agent row (any tenant: the instance uid is global) for the rest of the transaction. */
export async function lockAgentBinding(db: Db, id: string): Promise<AgentBinding | undefined> {
  return db('agents')
    .select(
      'id',
      'tenant_id',
      'group_id',
      'name',
      'status',
      'enrolled_with_token_id',
      'certificate_serial',
      'certificate_not_after',
      'certificate_revoked_at',
      'certificate_used_at',
    )
    .where({ id })
    .forNoKeyUpdate()
    .first();
}

/** The agent holds a certificate of ours that is neither revoked nor expired. */
export function hasLiveCertificate(agent: AgentBinding): boolean {
  return (
    agent.certificate_serial !== null &&
    agent.certificate_revoked_at === null &&
    agent.certificate_not_after !== null &&
    agent.certificate_not_after.getTime() > Date.now()
  );
}

/**
 * Can the agent still prove who it is: a live certificate, or the token it is bound to,
 * unrevoked? Then nobody else may enroll under its uid.
 */
export async function hasUsableCredential(db: Db, agent: AgentBinding): Promise<boolean> {
  if (hasLiveCertificate(agent)) return true;
  if (!agent.enrolled_with_token_id) return false;
  const token = await findBootstrapTokenById(db, agent.enrolled_with_token_id);
  return token !== undefined && token.revoked_at === null;
}

/** Re-enrolment of a known agent with another token of its tenant: it now authenticates with that one. */
export async function rebindAgentToken(db: Db, id: string, tokenId: string): Promise<void> {
  await db('agents')
    .where({ id })
    .update({
      enrolled_with_token_id: tokenId,
      status: 'enrolling',
      certificate_used_at: null,
      row_version: db.raw('row_version + 1'),
      updated_at: db.fn.now(),
    } as never);
}

/** Agents waiting for an operator's approval, installation-wide (a cap against floods). */
export async function countPendingAgents(db: Db): Promise<number> {
  const [row] = await db('agents').where({ status: 'pending-approval' }).count<Array<{ count: string }>>('* as count');
  return Number(row?.count ?? 0);
}

/** What admission by certificate reads of the agent (any tenant: the instance uid is global). */
export async function findCertificateAdmission(
  db: Db,
  id: string,
): Promise<Pick<AgentBinding, 'tenant_id' | 'status' | 'certificate_used_at'> | undefined> {
  return db('agents').select('tenant_id', 'status', 'certificate_used_at').where({ id }).first();
}

/** findCertificateAdmission for many agents in one statement, by id (unknown ids are left out). */
export async function findCertificateAdmissions(
  db: Db,
  ids: string[],
): Promise<Map<string, Pick<AgentBinding, 'tenant_id' | 'status' | 'certificate_used_at'>>> {
  const rows: Array<Pick<AgentBinding, 'id' | 'tenant_id' | 'status' | 'certificate_used_at'>> = await db('agents')
    .select('id', 'tenant_id', 'status', 'certificate_used_at')
    .whereRaw('id = ANY(?::uuid[])', [ids]);
  return new Map(rows.map(({ id, ...row }) => [id, row]));
}

/** The agent's first connection with its certificate: from now on that is how it gets in. */
export async function markCertificateUsed(db: Db, id: string): Promise<void> {
  await db('agents')
    .where({ id })
    .whereNull('certificate_used_at')
    .update({ certificate_used_at: db.fn.now() } as never);
}

/** The status of each of these agents (ids of no agent are left out). */
export async function agentStatuses(db: Db, ids: string[]): Promise<Array<{ id: string; status: AgentStatus }>> {
  return db('agents').select('id', 'status').whereRaw('id = ANY(?::uuid[])', [ids]);
}
