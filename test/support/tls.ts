/**
 * Certificate authorities of a test's own, as an organisation's internal CA would be: a
 * self-signed CA certificate (valid, or already expired) and server certificates it issues.
 */
import {
  createSelfSignedCa,
  issueServerCertificate,
  type AgentCa,
  type ServerCertificate,
} from '../../domain/certificates';
import { webcrypto, x509 } from '../../domain/certificates/x509';

/** A CA named `name`, valid from an hour ago for a year (or, `expired`, until yesterday). */
export async function testCa(name: string, options: { expired?: boolean } = {}): Promise<AgentCa> {
  const day = 86_400_000;
  const [notBefore, notAfter] = options.expired
    ? [new Date(Date.now() - 30 * day), new Date(Date.now() - day)]
    : [new Date(Date.now() - 3_600_000), new Date(Date.now() + 365 * day)];
  const { keys, certificate } = await createSelfSignedCa(`CN=${name}`, { notBefore, notAfter });
  return { id: null, certificate, certificatePem: certificate.toString('pem'), privateKey: keys.privateKey };
}

/** A server certificate (with its chain) and key the CA issued for `hostnames`. */
export const serverCertificate = (ca: AgentCa, hostnames: string[]): Promise<ServerCertificate> =>
  issueServerCertificate(ca, hostnames);

/** A client certificate and its key, as a TLS client presents them. */
export interface ClientCertificate {
  cert: string;
  key: string;
}

/** A CA of our own making with the same name as `ca` (the agents' CA), and a leaf naming `agentId`: another CA's certificate that looks like ours. */
export async function foreignCertificate(ca: AgentCa, agentId: string): Promise<ClientCertificate> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const generate = async () => await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const [caKeys, leafKeys] = await Promise.all([generate(), generate()]);
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 86_400_000);
  const fakeCa = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: ca.certificate.subject,
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: '7f0102030405060708090a0b0c0d0e0f',
    subject: `CN=${agentId}`,
    issuer: fakeCa.subject,
    notBefore,
    notAfter,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'url', value: `urn:fleet:agent:default/${agentId}` }]),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey));
  return { cert: leaf.toString('pem'), key: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
}
