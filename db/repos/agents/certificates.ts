import type { Db } from '../../connection';
import type { AgentStatus } from './inventory';

/**
 * The agent row's copy of its certificate (`certificate_*`), which the API shows and the
 * gateway checks; the issuance record itself is agent_certificates.
 */

/**
 * Locks the tenant's agent for a certificate request, and reads its status: serialises
 * CSRs of one agent, and holds off a revocation until the certificate is on record.
 */
export async function lockAgentForCertificate(
  db: Db,
  tenantId: string,
  id: string,
): Promise<{ status: AgentStatus } | undefined> {
  return db('agents').select('status').where({ id, tenant_id: tenantId }).forNoKeyUpdate().first();
}

/** Shows a newly issued certificate on its agent (no row in tests that record only the certificate). */
export async function showAgentCertificate(
  db: Db,
  tenantId: string,
  id: string,
  certificate: { serial: string; notAfter: Date },
): Promise<void> {
  await db('agents')
    .where({ tenant_id: tenantId, id })
    .update({
      certificate_serial: certificate.serial,
      certificate_not_after: certificate.notAfter,
      certificate_revoked_at: null,
      updated_at: db.fn.now(),
      row_version: db.raw('row_version + 1'),
    } as never);
}

/** Shows the agent's certificate revoked (the first revocation time is kept). */
export async function showAgentCertificateRevoked(db: Db, tenantId: string, id: string): Promise<void> {
  await db('agents')
    .where({ tenant_id: tenantId, id })
    .update({
      certificate_revoked_at: db.raw('coalesce(certificate_revoked_at, now())'),
      updated_at: db.fn.now(),
      row_version: db.raw('row_version + 1'),
    } as never);
}
