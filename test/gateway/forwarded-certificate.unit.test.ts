import { X509Certificate } from 'node:crypto';
import { forwardedCertificate } from '../../gateway/forwarded-certificate';
import { handshakeRefusal, issueServerCertificate } from '../../domain/certificates';
import { testCa } from '../support/tls';

describe('the certificate a TLS-ending proxy forwards', () => {
  let leafPem: string;
  let caPem: string;
  let otherCaPem: string;
  beforeAll(async () => {
    const [ca, other] = await Promise.all([testCa('forwarded'), testCa('forwarded')]);
    leafPem = (await issueServerCertificate(ca, ['agent.example'])).certificatePem.split(
      /(?<=-----END CERTIFICATE-----\n)/,
    )[0]!;
    caPem = ca.certificatePem;
    otherCaPem = other.certificatePem;
  });

  test('base64 DER (HAProxy) and URL-escaped PEM (nginx) are the same certificate; none is none', () => {
    const der = new X509Certificate(leafPem).raw;
    expect(forwardedCertificate(der.toString('base64'))!.fingerprint256).toBe(
      new X509Certificate(leafPem).fingerprint256,
    );
    expect(forwardedCertificate(encodeURIComponent(leafPem))!.fingerprint256).toBe(
      new X509Certificate(leafPem).fingerprint256,
    );
    expect(forwardedCertificate(undefined)).toBeUndefined();
    expect(forwardedCertificate('')).toBeUndefined();
  });

  test.each([
    ['not base64', 'not a certificate'],
    ['base64 of something else', Buffer.from('hello').toString('base64')],
    ['two headers joined', 'QUJD, QUJD'],
    ['broken escapes', '%2D%E0%A4%A'],
  ])('%s is malformed', (_name, header) => {
    expect(() => forwardedCertificate(header)).toThrow(expect.objectContaining({ reason: 'malformed' }));
  });

  test('the same header twice (an array) is malformed', () => {
    expect(() => forwardedCertificate(['QUJD', 'QUJD'])).toThrow(expect.objectContaining({ reason: 'malformed' }));
  });

  test('checked against the CA: its issuer and signature, then its validity now', () => {
    const leaf = new X509Certificate(leafPem);
    expect(handshakeRefusal(leaf, new X509Certificate(caPem))).toBeUndefined();
    // Another CA of the same name: the name matches, the signature does not.
    expect(handshakeRefusal(leaf, new X509Certificate(otherCaPem))).toMatchObject({ reason: 'unknown-issuer' });
    const ca = new X509Certificate(caPem);
    expect(handshakeRefusal(leaf, ca, Date.parse(leaf.validTo) + 1000)).toMatchObject({ reason: 'expired' });
    expect(handshakeRefusal(leaf, ca, Date.parse(leaf.validFrom) - 1000)).toMatchObject({ reason: 'not-yet-valid' });
  });
});
