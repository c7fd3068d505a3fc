import { isIP } from 'node:net';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { caSigningAlgorithm, type AgentCa } from './ca';
import { webcrypto, x509 } from './x509';

export interface ServerCertificate {
  /** PEM of the listener's certificate followed by the CA's, so agents can build the chain. */
  certificatePem: string;
  keyPem: string;
}

/** Long enough to outlive a deployment; the key lives only in this process's memory. */
const SERVER_VALIDITY_DAYS = 90;

/**
 * The agent listener's TLS certificate, issued at start by the agents' CA for `hostnames`
 * (DNS names and IP addresses); or, valid `validityDays`, the one of a proxy that ends agents'
 * TLS (`npm run fleet -- issue-proxy-certificate`). Agents that trust the CA (the certificate
 * they receive with their leaf carries it as `ca_cert`) then trust the listener too.
 */
export async function issueServerCertificate(
  ca: AgentCa,
  hostnames: string[],
  validityDays = SERVER_VALIDITY_DAYS,
): Promise<ServerCertificate> {
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const notBefore = new Date(Date.now() - 5 * 60_000);
  const notAfter = new Date(notBefore.getTime() + validityDays * 86_400_000);
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject: [{ CN: [hostnames[0] ?? 'localhost'] }],
    issuer: ca.certificate.subjectName,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: ca.privateKey,
    signingAlgorithm: caSigningAlgorithm(ca),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        hostnames.map((name) => (isIP(name) ? { type: 'ip', value: name } : { type: 'dns', value: name })),
      ),
      await x509.AuthorityKeyIdentifierExtension.create(ca.certificate),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return {
    certificatePem: `${certificate.toString('pem')}\n${ca.certificatePem.trim()}\n`,
    keyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8
      .toString('base64')
      .replace(/(.{64})/g, '$1\n')
      .trim()}\n-----END PRIVATE KEY-----\n`,
  };
}

/** An operator's certificate and key for the listener (`Agents:Tls:CertificateFile` / `KeyFile`). */
export async function readServerCertificate(files: {
  certificateFile: string;
  keyFile: string;
}): Promise<ServerCertificate> {
  return {
    certificatePem: await readFile(files.certificateFile, 'utf8'),
    keyPem: await readFile(files.keyFile, 'utf8'),
  };
}
