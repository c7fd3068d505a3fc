/**
 * The client certificate a TLS-ending proxy forwards (Agents:Tls:TerminatedBy) in the
 * X-Agent-Certificate header: base64 DER (HAProxy's `%[ssl_c_der,base64]`) or URL-escaped PEM
 * (nginx's `$ssl_client_escaped_cert`). The proxy has verified it at its handshake; the
 * listener checks it again (domain/certificates `handshakeRefusal`), so a proxy that
 * verified nothing lets no one in on a certificate of its own making.
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
