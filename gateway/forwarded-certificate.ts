/**
 * The client certificate a TLS-ending proxy forwards (Agents:Tls:TerminatedBy) in the
 * X-Agent-Certificate header: base64 DER (HAProxy's `%[ssl_c_der,base64]`) or URL-escaped PEM
 * (nginx's `$ssl_client_escaped_cert`). The proxy has verified it at its handshake; the
 * listener checks it again against the agents' CA, so a proxy that verified nothing lets
 * no one in on a certificate of its own making.
 */
import { X509Certificate } from 'node:crypto';
import { CertificateRejectedError } from '../domain/certificates';

/** The header the proxy sets, after removing any the agent sent (deploy/haproxy-agents-tls.cfg). */
export const CERTIFICATE_HEADER = 'x-agent-certificate';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The certificate in `header` (undefined: no header, no certificate). Two headers, or one that
 * is neither form, is refused as malformed: a proxy sends exactly one.
 */
export function forwardedCertificate(header: string | string[] | undefined): X509Certificate | undefined {
  if (header === undefined || header === '') return undefined;
  const refuse = () =>
    new CertificateRejectedError(
      'malformed',
      `${CERTIFICATE_HEADER} is not one base64 DER or URL-escaped PEM certificate`,
    );
  if (typeof header !== 'string') throw refuse();
  let encoded: string | Buffer;
  if (header.startsWith('-----BEGIN') || header.startsWith('%2D')) {
    try {
      encoded = decodeURIComponent(header);
    } catch {
      throw refuse();
    }
  } else if (BASE64.test(header)) encoded = Buffer.from(header, 'base64');
  else throw refuse();
  try {
    return new X509Certificate(encoded);
  } catch {
    throw refuse();
  }
}

/**
 * Why `certificate` is not one the agents' CA issued and valid now (undefined: it is), as
 * OpenSSL would have told at a handshake of our own: the issuer's name and signature, then
 * the validity period.
 */
export function forwardedRefusal(
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
