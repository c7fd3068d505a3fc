/**
 * Certificate authorities of a test's own, as an organisation's internal CA would be: a
 * self-signed CA certificate (valid, or already expired) and server certificates it issues.
 */
import type { AgentCa } from '../../domain/certificates';
import { issueServerCertificate, type ServerCertificate } from '../../domain/certificates';
import { webcrypto, x509 } from '../../domain/certificates/x509';

const SIGNING = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A CA named `name`, valid from an hour ago for a year (or, `expired`, until yesterday). */
export async function testCa(name: string, options: { expired?: boolean } = {}): Promise<AgentCa> {
  const keys = await webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
  const day = 86_400_000;
  const [notBefore, notAfter] = options.expired
    ? [new Date(Date.now() - 30 * day), new Date(Date.now() - day)]
    : [new Date(Date.now() - 3_600_000), new Date(Date.now() + 365 * day)];
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: SIGNING,
    notBefore,
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { id: null, certificate, certificatePem: certificate.toString('pem'), privateKey: keys.privateKey };
}

/** A server certificate (with its chain) and key the CA issued for `hostnames`. */
export const serverCertificate = (ca: AgentCa, hostnames: string[]): Promise<ServerCertificate> =>
  issueServerCertificate(ca, hostnames);
