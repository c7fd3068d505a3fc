import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/connection';
import { insertAgentCertificate } from '../../db/repos/agent-certificates';
import { caSigningAlgorithm, type AgentCa } from './ca';
import type { CheckedCsr } from './csr';
import { x509 } from './x509';

export interface IssueLeafRequest {
  tenantId: string;
  agentId: string;
  /** A CSR that passed checkCsr for this agent; only its public key is used. */
  csr: CheckedCsr;
  ttlHours: number;
  /** For tests; defaults to the current time. */
  now?: Date;
}

export interface IssuedLeaf {
  serial: string;
  certificatePem: string;
  notBefore: Date;
  notAfter: Date;
}

/** Agents' clocks may run a little behind ours; a leaf is valid from a few minutes ago. */
const BACKDATE_MS = 5 * 60 * 1000;

/** The identity the server gives an agent's certificate, whatever the CSR asked for. */
export function agentUri(tenantId: string, agentId: string): string {
  return `urn:fleet:agent:${tenantId}/${agentId}`;
}

/**
 * Signs a client certificate for the agent and records it (in the caller's transaction
 * when `db` is one). Subject CN = agent id, URI SAN = agentUri, extended key usage
 * clientAuth only, validity Agents:CertificateTtlHours, a random 128-bit serial.
 */
export async function issueLeafCertificate(db: Db, ca: AgentCa, request: IssueLeafRequest): Promise<IssuedLeaf> {
  const now = request.now ?? new Date();
  const notBefore = new Date(now.getTime() - BACKDATE_MS);
  const notAfter = new Date(now.getTime() + request.ttlHours * 3600_000);
  const serial = randomSerial();
  const keyUsage =
    request.csr.keyType === 'rsa'
      ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
      : x509.KeyUsageFlags.digitalSignature;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial,
    subject: [{ CN: [request.agentId] }],
    issuer: ca.certificate.subjectName,
    notBefore,
    notAfter,
    publicKey: request.csr.csr.publicKey,
    signingKey: ca.privateKey,
    signingAlgorithm: caSigningAlgorithm(ca),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(keyUsage, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'url', value: agentUri(request.tenantId, request.agentId) }]),
      await x509.SubjectKeyIdentifierExtension.create(request.csr.csr.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(ca.certificate),
    ],
  });
  // Dates as the certificate encodes them (whole seconds), so the row matches the leaf.
  const row = await insertAgentCertificate(db, {
    serial,
    ca_id: ca.id,
    tenant_id: request.tenantId,
    agent_id: request.agentId,
    not_before: certificate.notBefore,
    not_after: certificate.notAfter,
  });
  return {
    serial: row.serial,
    certificatePem: certificate.toString('pem'),
    notBefore: row.not_before,
    notAfter: row.not_after,
  };
}

/** 16 random bytes as lower-case hex, first byte 0x01..0x7f: positive and exactly 16 bytes in DER. */
function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}
