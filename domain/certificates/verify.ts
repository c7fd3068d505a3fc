import type { X509Certificate } from 'node:crypto';
import type { Db } from '../../db/connection';
import { findAgentCertificate, type AgentCertificateRow } from '../../db/repos/agent-certificates';
import type { AgentCa } from './ca';
import { AgentCertificateError, x509 } from './x509';

export type CertificateRefusal =
  | 'malformed'
  | 'unknown-issuer'
  | 'not-yet-valid'
  | 'expired'
  | 'not-an-agent-certificate'
  | 'unknown-serial'
  | 'revoked';
export class CertificateRejectedError extends AgentCertificateError<CertificateRefusal> {}

export interface AgentIdentity {
  tenantId: string;
  agentId: string;
  serial: string;
}

const AGENT_URI = /^urn:fleet:agent:([^/]+)\/([0-9a-f-]{36})$/i;

/**
 * Maps the client certificate an agent presented (DER from `getPeerX509Certificate().raw`,
 * or PEM) to the agent, if it is signed by our CA, within its validity, one we recorded
 * issuing to that agent, and not revoked. Reads the database on every call, so a
 * revocation is seen by the next handshake on any replica.
 */
export async function verifyAgentCertificate(
  db: Db,
  ca: AgentCa,
  presented: string | Uint8Array,
  now: Date = new Date(),
): Promise<AgentIdentity> {
  const certificate = parse(presented);
  await checkIssuer(certificate, ca);
  if (now < certificate.notBefore)
    throw new CertificateRejectedError(
      'not-yet-valid',
      `the certificate is valid from ${certificate.notBefore.toISOString()}`,
    );
  if (now > certificate.notAfter)
    throw new CertificateRejectedError('expired', `the certificate expired at ${certificate.notAfter.toISOString()}`);
  const identity = agentIdentity(certificate);
  const row = await findAgentCertificate(db, identity.serial);
  if (!row || row.tenant_id !== identity.tenantId || row.agent_id !== identity.agentId) {
    throw new CertificateRejectedError(
      'unknown-serial',
      `no certificate with serial ${identity.serial} was issued to this agent`,
    );
  }
  if (row.revoked_at)
    throw new CertificateRejectedError(
      'revoked',
      `the certificate ${identity.serial} was revoked at ${row.revoked_at.toISOString()}`,
    );
  return identity;
}

/**
 * What Node reports of a peer certificate (`crypto.X509Certificate`, from the socket's
 * `getPeerX509Certificate()`), the parts we read: its fields are computed when read, where
 * `getPeerCertificate()` builds every field, fingerprints and public key included, on each
 * handshake.
 */
export interface VerifiedPeer {
  serialNumber: string;
  /** The subject's attributes, one `KEY=value` a line. */
  subject: string;
  /** `URI:…, DNS:…`; undefined without the extension. */
  subjectAltName?: string;
}

/**
 * The fast path for a client certificate OpenSSL has already verified against our CA
 * (`socket.authorized`: signature, chain and validity): no re-parse, no signature check in
 * JavaScript, only the identity the server wrote and the revocation row. Undefined when the
 * certificate does not look like one of ours; the caller then runs verifyAgentCertificate.
 */
export async function verifyAuthorizedPeer(
  db: Db,
  peer: VerifiedPeer,
  /** Reads the certificate row by serial (the listener batches these reads). */
  findCertificate: (serial: string) => Promise<AgentCertificateRow | undefined> = (serial) =>
    findAgentCertificate(db, serial),
): Promise<AgentIdentity | undefined> {
  const uris = (peer.subjectAltName ?? '')
    .split(', ')
    .filter((name) => name.startsWith('URI:'))
    .map((name) => AGENT_URI.exec(name.slice(4)))
    .filter((match) => match !== null);
  const cn = commonName(peer.subject);
  const match = uris.length === 1 ? uris[0]! : undefined;
  if (!match || cn?.toLowerCase() !== match[2]!.toLowerCase()) return undefined;
  let serial = peer.serialNumber.toLowerCase();
  if (serial.length % 2 === 1) serial = `0${serial}`;
  const identity = { tenantId: match[1]!, agentId: match[2]!.toLowerCase(), serial };
  const row = await findCertificate(serial);
  if (!row) return undefined;
  if (row.tenant_id !== identity.tenantId || row.agent_id !== identity.agentId) {
    throw new CertificateRejectedError(
      'unknown-serial',
      `no certificate with serial ${serial} was issued to this agent`,
    );
  }
  if (row.revoked_at)
    throw new CertificateRejectedError(
      'revoked',
      `the certificate ${serial} was revoked at ${row.revoked_at.toISOString()}`,
    );
  return identity;
}

/**
 * Why `certificate` is not one the agents' CA issued and valid now (undefined: it is), as
 * OpenSSL tells at a handshake of our own: the issuer's name and signature, then the validity
 * period. For a certificate another party says it verified (a TLS-ending proxy's, before
 * verifyAuthorizedPeer).
 */
export function handshakeRefusal(
  certificate: X509Certificate,
  ca: X509Certificate,
  now = Date.now(),
): CertificateRejectedError | undefined {
  if (!certificate.checkIssued(ca) || !certificate.verify(ca.publicKey))
    return new CertificateRejectedError('unknown-issuer', 'the certificate is not signed by the agent CA');
  if (now < Date.parse(certificate.validFrom))
    return new CertificateRejectedError('not-yet-valid', `the certificate is valid from ${certificate.validFrom}`);
  if (now > Date.parse(certificate.validTo))
    return new CertificateRejectedError('expired', `the certificate expired at ${certificate.validTo}`);
  return undefined;
}

/**
 * The subject's one CN, as Node prints it; undefined when there is none or more than one. A
 * value Node had to escape is not an agent id, so the fast path declines it (the full check
 * then parses the certificate itself).
 */
export function commonName(subject: string): string | undefined {
  const names = subject.split('\n').filter((line) => line.startsWith('CN='));
  return names.length === 1 ? names[0]!.slice(3) : undefined;
}

function parse(presented: string | Uint8Array): x509.X509Certificate {
  try {
    return new x509.X509Certificate(typeof presented === 'string' ? presented : Buffer.from(presented));
  } catch {
    throw new CertificateRejectedError('malformed', 'the client certificate is not a DER or PEM X.509 certificate');
  }
}

async function checkIssuer(certificate: x509.X509Certificate, ca: AgentCa): Promise<void> {
  let signed = false;
  if (certificate.issuer === ca.certificate.subject) {
    try {
      signed = await certificate.verify({ publicKey: ca.certificate.publicKey, signatureOnly: true });
    } catch {
      signed = false;
    }
  }
  if (!signed) throw new CertificateRejectedError('unknown-issuer', 'the certificate is not signed by the agent CA');
}

/** The identity is the URI SAN the server wrote (and the CN must agree with it). */
function agentIdentity(certificate: x509.X509Certificate): AgentIdentity {
  const san = certificate.getExtension(x509.SubjectAlternativeNameExtension);
  const uris =
    san?.names.items
      .filter((n) => n.type === 'url')
      .map((n) => AGENT_URI.exec(n.value))
      .filter((m) => m !== null) ?? [];
  const cn = certificate.subjectName.getField('CN');
  const match = uris.length === 1 ? uris[0]! : undefined;
  if (!match || cn.length !== 1 || cn[0]!.toLowerCase() !== match[2]!.toLowerCase()) {
    throw new CertificateRejectedError(
      'not-an-agent-certificate',
      'the certificate does not carry exactly one agent identity',
    );
  }
  return { tenantId: match[1]!, agentId: match[2]!.toLowerCase(), serial: certificate.serialNumber.toLowerCase() };
}
