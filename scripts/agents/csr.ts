/** The CSR a simulated agent sends once admitted. */
import { webcrypto, x509 } from '../../domain/certificates/x509';

export interface GeneratedCsr {
  csrPem: string;
  keyPem: string;
  /** SubjectPublicKeyInfo DER of the key, to match the certificate that answers. */
  spki: Buffer;
}

/** A PKCS#10 CSR `CN=<agent id>` for a fresh EC P-256 key; the key as PKCS#8 PEM. */
export async function generateCsr(agentId: string): Promise<GeneratedCsr> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `CN=${agentId}`,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
  return { csrPem: csr.toString('pem'), keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'), spki };
}
