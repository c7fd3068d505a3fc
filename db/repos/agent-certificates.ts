import type { Db } from '../connection';

export interface AgentCaRow {
  id: string;
  active: boolean;
  certificate_pem: string;
  key_iv: Buffer;
  key_tag: Buffer;
  key_ciphertext: Buffer;
  created_at: Date;
  retired_at: Date | null;
}

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

export type NewAgentCa = Pick<AgentCaRow, 'certificate_pem' | 'key_iv' | 'key_tag' | 'key_ciphertext'>;
export type NewAgentCertificate = Pick<
  AgentCertificateRow,
  'serial' | 'ca_id' | 'tenant_id' | 'agent_id' | 'not_before' | 'not_after'
>;

/** Serialises CA creation across api replicas until the surrounding transaction ends. */
export async function lockAgentCa(trx: Db): Promise<void> {
  await trx.raw(`SELECT pg_advisory_xact_lock(hashtextextended('agent_ca', 0))`);
}

export async function findActiveAgentCa(db: Db): Promise<AgentCaRow | undefined> {
  return db<AgentCaRow>('agent_ca').where({ active: true }).first();
}

export async function insertAgentCa(db: Db, ca: NewAgentCa): Promise<AgentCaRow> {
  const [row] = await db<AgentCaRow>('agent_ca').insert(ca as never).returning('*');
  return row!;
}

/**
 * Records an issued leaf and shows it on the agent (the agent row may not exist yet
 * in tests; then only the certificate is recorded).
 */
export async function insertAgentCertificate(db: Db, cert: NewAgentCertificate): Promise<AgentCertificateRow> {
  const [row] = await db<AgentCertificateRow>('agent_certificates').insert(cert as never).returning('*');
  await db('agents')
    .where({ tenant_id: cert.tenant_id, id: cert.agent_id })
    .update({
      certificate_serial: cert.serial,
      certificate_not_after: cert.not_after,
      certificate_revoked_at: null,
      updated_at: db.fn.now(),
      row_version: db.raw('row_version + 1'),
    } as never);
  return row!;
}

export async function findAgentCertificate(db: Db, serial: string): Promise<AgentCertificateRow | undefined> {
  return db<AgentCertificateRow>('agent_certificates').where({ serial }).first();
}

/** Revokes every unrevoked certificate of the agent; returns the serials revoked now. */
export async function revokeAgentCertificates(db: Db, tenantId: string, agentId: string): Promise<string[]> {
  const rows: Pick<AgentCertificateRow, 'serial'>[] = await db('agent_certificates')
    .where({ tenant_id: tenantId, agent_id: agentId })
    .whereNull('revoked_at')
    .update({ revoked_at: db.fn.now() } as never)
    .returning('serial');
  if (rows.length > 0) {
    await db('agents')
      .where({ tenant_id: tenantId, id: agentId })
      .update({
        certificate_revoked_at: db.raw('coalesce(certificate_revoked_at, now())'),
        updated_at: db.fn.now(),
        row_version: db.raw('row_version + 1'),
      } as never);
  }
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
