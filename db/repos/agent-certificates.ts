import type { Db } from '../connection';
import { showAgentCertificate, showAgentCertificateRevoked } from './agents/certificates';

export interface AgentCertificateRow {
  serial: string;
  ca_id: string | null;
  tenant_id: string;
  agent_id: string;
  not_before: Date;
  not_after: Date;
  revoked_at: Date | null;
  created_at: Date;
}

export type NewAgentCertificate = Pick<
  AgentCertificateRow,
  'serial' | 'ca_id' | 'tenant_id' | 'agent_id' | 'not_before' | 'not_after'
>;

/**
 * Records an issued leaf and shows it on the agent (the agent row may not exist yet
 * in tests; then only the certificate is recorded).
 */
export async function insertAgentCertificate(db: Db, cert: NewAgentCertificate): Promise<AgentCertificateRow> {
  const [row] = await db<AgentCertificateRow>('agent_certificates')
    .insert(cert as never)
    .returning('*');
  await showAgentCertificate(db, cert.tenant_id, cert.agent_id, { serial: cert.serial, notAfter: cert.not_after });
  return row!;
}

export async function findAgentCertificate(db: Db, serial: string): Promise<AgentCertificateRow | undefined> {
  return db<AgentCertificateRow>('agent_certificates').where({ serial }).first();
}

/** findAgentCertificate for many serials in one statement, by serial (unknown serials are left out). */
export async function findAgentCertificates(db: Db, serials: string[]): Promise<Map<string, AgentCertificateRow>> {
  const rows: AgentCertificateRow[] = await db('agent_certificates').whereIn('serial', serials);
  return new Map(rows.map((row) => [row.serial, row]));
}

/** An unrevoked certificate of the agent issued within the last `seconds`, if any. */
export async function findCertificateIssuedWithin(
  db: Db,
  tenantId: string,
  agentId: string,
  seconds: number,
): Promise<Pick<AgentCertificateRow, 'serial'> | undefined> {
  return db('agent_certificates')
    .select('serial')
    .where({ tenant_id: tenantId, agent_id: agentId })
    .whereNull('revoked_at') // an agent re-enrolled after a revocation gets a certificate at once
    .where('created_at', '>', db.raw(`now() - make_interval(secs => ?)`, [seconds]))
    .first();
}

/** Revokes every unrevoked certificate of the agent; returns the serials revoked now. */
export async function revokeAgentCertificates(db: Db, tenantId: string, agentId: string): Promise<string[]> {
  const rows: Pick<AgentCertificateRow, 'serial'>[] = await db('agent_certificates')
    .where({ tenant_id: tenantId, agent_id: agentId })
    .whereNull('revoked_at')
    .update({ revoked_at: db.fn.now() } as never)
    .returning('serial');
  if (rows.length > 0) await showAgentCertificateRevoked(db, tenantId, agentId);
  return rows.map((r) => r.serial);
}

/** Revokes one certificate by serial (idempotent: the first revocation time is kept). */
export async function revokeAgentCertificate(db: Db, serial: string): Promise<AgentCertificateRow | undefined> {
  const [row] = await db<AgentCertificateRow>('agent_certificates')
    .where({ serial })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') } as never)
    .returning('*');
  return row;
}
