/**
 * An admitted agent's CSR (`connection_settings_request.opamp.certificate_request.csr`)
 * answered with a client certificate our CA signs: the agent then reconnects with mTLS.
 * The same path renews a certificate: an agent sends a new CSR before its leaf expires.
 */
import type { Knex } from 'knex';
import { findCertificateIssuedWithin } from '../db/repos/agent-certificates';
import { lockAgentForCertificate } from '../db/repos/agents';
import { shareLockBootstrapToken } from '../db/repos/bootstrap-tokens';
import { checkCsr, issueLeafCertificate, type AgentCa, type CheckedCsr } from '../domain/certificates';
import type { AgentToServer } from './codec';

/** By default one certificate per agent per minute; a CSR sooner is left unanswered (not refused). */
export const MIN_REISSUE_SECONDS = 60;

export function csrOf(message: AgentToServer): Uint8Array | undefined {
  const csr = message.connectionSettingsRequest?.opamp?.certificateRequest?.csr;
  return csr && csr.length > 0 ? csr : undefined;
}

/**
 * Checks the CSR for this agent (before anything about the message is stored); throws
 * CsrRejectedError for a bad one, and the caller closes the connection.
 */
export function checkCertificateRequest(csrBytes: Uint8Array, agentId: string): Promise<CheckedCsr> {
  return checkCsr(csrBytes, agentId);
}

/** Agents that may be given a certificate: neither held for approval nor cut off. */
const CERTIFIABLE = new Set(['enrolling', 'online', 'offline']);

/**
 * Signs a checked CSR for the admitted agent; undefined when the agent was issued a
 * certificate within the last `minReissueSeconds` (a retry, or a CSR loop), or when it
 * was cut off or held since its admission.
 */
export async function answerCertificateRequest(
  db: Knex,
  ca: AgentCa,
  options: { ttlHours: number; minReissueSeconds: number },
  agent: {
    tenantId: string;
    agentId: string;
    /** The bootstrap token it authenticated with, if that was its credential. */ tokenId?: string;
  },
  csr: CheckedCsr,
): Promise<{ certificatePem: string; caPem: string } | undefined> {
  return db.transaction(async (trx) => {
    // Serialises CSRs of one agent, so two at once cannot both pass the rate check, and
    // holds off a revocation until the certificate is on record (and so revoked with the rest).
    const row = await lockAgentForCertificate(trx, agent.tenantId, agent.agentId);
    if (!row || !CERTIFIABLE.has(row.status)) return undefined; // revoked (or rejected) since it was admitted
    if (agent.tokenId) {
      // Its token revoked meanwhile: a certificate would outlive the revocation. FOR SHARE
      // waits for a revocation in flight, and holds off one that comes later until this commits.
      const token = await shareLockBootstrapToken(trx, agent.tokenId);
      if (!token || token.revoked_at) return undefined;
    }
    // Unrevoked ones only: an agent re-enrolled after a revocation gets a certificate at once.
    const recent = await findCertificateIssuedWithin(trx, agent.tenantId, agent.agentId, options.minReissueSeconds);
    if (recent) return undefined;
    const leaf = await issueLeafCertificate(trx, ca, {
      tenantId: agent.tenantId,
      agentId: agent.agentId,
      csr,
      ttlHours: options.ttlHours,
    });
    return { certificatePem: leaf.certificatePem, caPem: ca.certificatePem };
  });
}
