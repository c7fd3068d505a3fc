import { createPublicKey } from 'node:crypto';
import { AgentCertificateError, x509 } from './x509';
import { isUuid } from '../../db/uuid';

/**
 * Checks the CSR an authenticated agent sent in `connection_settings_request`.
 * Only the CSR's public key is used: the leaf's identity is set by the server.
 *
 * Instance-uid convention: a CSR *names* an instance uid when its subject CN is a UUID,
 * or when it carries a URI SAN `urn:opamp:instance-uid:<uuid>` (or our own
 * `urn:fleet:agent:<tenant>/<uuid>`). Every uid it names must be the agent's id
 * (compared case-insensitively). A CSR that names none (CN "otelcol", say) is accepted.
 */

export type CsrRefusal = 'malformed' | 'unsupported-key' | 'key-too-small' | 'bad-signature' | 'instance-uid-mismatch';
export class CsrRejectedError extends AgentCertificateError<CsrRefusal> {}

export interface CheckedCsr {
  csr: x509.Pkcs10CertificateRequest;
  keyType: 'rsa' | 'ec';
}

const OPAMP_URI = /^urn:opamp:instance-uid:(.+)$/i;
const FLEET_URI = /^urn:fleet:agent:[^/]*\/(.+)$/i;
const MIN_RSA_BITS = 2048;
const EC_CURVES = new Set(['prime256v1', 'secp384r1']); // P-256, P-384
const MAX_CSR_BYTES = 16 * 1024;

export async function checkCsr(input: string | Uint8Array, agentId: string): Promise<CheckedCsr> {
  const csr = parse(input);
  const keyType = checkKey(csr);
  if (!(await verifySignature(csr)))
    throw new CsrRejectedError('bad-signature', 'the CSR signature does not verify with its public key');
  for (const uid of namedInstanceUids(csr)) {
    if (uid.toLowerCase() !== agentId.toLowerCase()) {
      throw new CsrRejectedError(
        'instance-uid-mismatch',
        `the CSR names instance uid ${uid}, not this agent's (${agentId})`,
      );
    }
  }
  return { csr, keyType };
}

function parse(input: string | Uint8Array): x509.Pkcs10CertificateRequest {
  if (input.length === 0 || input.length > MAX_CSR_BYTES)
    throw new CsrRejectedError('malformed', 'the CSR is empty or too large');
  try {
    // OpAMP carries the CSR as PEM bytes; DER is accepted too.
    const text = typeof input === 'string' ? input : Buffer.from(input).toString('latin1');
    return new x509.Pkcs10CertificateRequest(text.includes('-----BEGIN') ? text : Buffer.from(input));
  } catch {
    throw new CsrRejectedError('malformed', 'the CSR is not a PEM or DER PKCS#10 certificate request');
  }
}

function checkKey(csr: x509.Pkcs10CertificateRequest): 'rsa' | 'ec' {
  let key;
  try {
    key = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' });
  } catch {
    throw new CsrRejectedError('malformed', 'the CSR public key cannot be read');
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS)
      throw new CsrRejectedError('key-too-small', `RSA key of ${bits} bits; at least ${MIN_RSA_BITS} are required`);
    return 'rsa';
  }
  if (key.asymmetricKeyType === 'ec') {
    if (!EC_CURVES.has(details.namedCurve ?? '')) {
      throw new CsrRejectedError(
        'unsupported-key',
        `EC curve ${details.namedCurve ?? 'unknown'} is not supported; use P-256 or P-384`,
      );
    }
    return 'ec';
  }
  throw new CsrRejectedError(
    'unsupported-key',
    `key type ${key.asymmetricKeyType ?? 'unknown'} is not supported; use RSA (2048 bits or more) or EC P-256/P-384`,
  );
}

async function verifySignature(csr: x509.Pkcs10CertificateRequest): Promise<boolean> {
  try {
    return await csr.verify();
  } catch {
    return false; // an unsupported or garbled signature algorithm is a signature that does not verify
  }
}

/** Instance uids the CSR names in its subject CN or URI SANs (see the convention above). */
export function namedInstanceUids(csr: x509.Pkcs10CertificateRequest): string[] {
  const uids = csr.subjectName.getField('CN').filter((cn) => isUuid(cn));
  for (const extension of csr.extensions) {
    if (!(extension instanceof x509.SubjectAlternativeNameExtension)) continue;
    for (const name of extension.names.items) {
      if (name.type !== 'url') continue;
      const match = OPAMP_URI.exec(name.value) ?? FLEET_URI.exec(name.value);
      if (match) uids.push(match[1]!);
    }
  }
  return uids;
}
