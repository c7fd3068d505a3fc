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
