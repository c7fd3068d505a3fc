import { createPrivateKey, randomBytes, randomUUID, webcrypto } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { createDb } from '../../db/connection';
import { revokeAgentCertificates } from '../../db/repos/agent-certificates';
import {
  caSigningAlgorithm,
  loadAgentCaFromFiles,
  loadOrCreateAgentCa,
  type AgentCa,
} from '../../domain/certificates/ca';
import { checkCsr } from '../../domain/certificates/csr';
import { issueLeafCertificate } from '../../domain/certificates/leaf';
import { commonName, verifyAgentCertificate, verifyAuthorizedPeer } from '../../domain/certificates/verify';
import { x509 } from '../../domain/certificates/x509';
import { DecryptionError } from '../../platform/secrets';
import { createTestDatabase, type TestDatabase } from '../support/database';

const TENANT = 'acme';
const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const rsa = (modulusLength: number) =>
  ({ name: 'RSASSA-PKCS1-v1_5', modulusLength, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }) as const;

let database: TestDatabase;
let ca: AgentCa;
const key = randomBytes(32);

beforeAll(async () => {
  database = await createTestDatabase();
  await database.db('tenants').insert({ id: TENANT, display_name: TENANT });
  ca = await loadOrCreateAgentCa(database.db, key);
});
afterAll(() => database?.drop());

async function keys(algorithm: object = EC) {
  return await webcrypto.subtle.generateKey(algorithm as never, true, ['sign', 'verify']);
}

async function csrPem(options: { name?: string; uris?: string[]; algorithm?: object } = {}): Promise<string> {
  const algorithm = options.algorithm ?? EC;
  const extensions = options.uris
    ? [new x509.SubjectAlternativeNameExtension(options.uris.map((value) => ({ type: 'url' as const, value })))]
    : [];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: options.name ?? 'CN=otelcol',
    keys: await keys(algorithm),
    signingAlgorithm: algorithm,
    extensions,
  });
  return csr.toString('pem');
}

async function issue(agentId: string, now?: Date) {
  const csr = await checkCsr(await csrPem(), agentId);
  return issueLeafCertificate(database.db, ca, { tenantId: TENANT, agentId, csr, ttlHours: 24, now });
}

describe('agent CA', () => {
  test('a valid CSR is signed into a leaf whose identity the server set, and the leaf maps to the agent', async () => {
    const agentId = randomUUID();
    const csr = await checkCsr(
      Buffer.from(
        await csrPem({ name: 'CN=i-want-to-be-admin', uris: [`urn:opamp:instance-uid:${agentId.toUpperCase()}`] }),
      ),
      agentId,
    );
    const leaf = await issueLeafCertificate(database.db, ca, { tenantId: TENANT, agentId, csr, ttlHours: 24 });

    const certificate = new x509.X509Certificate(leaf.certificatePem);
    expect(certificate.subject).toBe(`CN=${agentId}`);
    expect(certificate.issuer).toBe(ca.certificate.subject);
    expect(certificate.getExtension(x509.SubjectAlternativeNameExtension)!.names.toJSON()).toEqual([
      { type: 'url', value: `urn:fleet:agent:${TENANT}/${agentId}` },
    ]);
    expect(certificate.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([
      x509.ExtendedKeyUsage.clientAuth,
    ]);
    expect(certificate.getExtension(x509.BasicConstraintsExtension)!.ca).toBe(false);
    const hours = (certificate.notAfter.getTime() - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    expect(await certificate.verify({ publicKey: ca.certificate.publicKey, signatureOnly: true })).toBe(true);

    const row = await database.db('agent_certificates').where({ serial: leaf.serial }).first();
    expect(row).toMatchObject({ tenant_id: TENANT, agent_id: agentId, ca_id: ca.id, revoked_at: null });
    expect(row.not_after.getTime()).toBe(certificate.notAfter.getTime());

    const der = new Uint8Array(certificate.rawData); // what a TLS socket's getPeerCertificate().raw gives
    expect(await verifyAgentCertificate(database.db, ca, der)).toEqual({
      tenantId: TENANT,
      agentId,
      serial: leaf.serial,
    });
    expect(await verifyAgentCertificate(database.db, ca, leaf.certificatePem)).toEqual({
      tenantId: TENANT,
      agentId,
      serial: leaf.serial,
    });
  });

  test('RSA 2048 and EC P-384 keys are accepted; a CSR whose CN is the agent uid is accepted', async () => {
    const agentId = randomUUID();
    await expect(checkCsr(await csrPem({ algorithm: rsa(2048) }), agentId)).resolves.toMatchObject({ keyType: 'rsa' });
    await expect(
      checkCsr(await csrPem({ algorithm: { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' } }), agentId),
    ).resolves.toMatchObject({ keyType: 'ec' });
    await expect(checkCsr(await csrPem({ name: `CN=${agentId}` }), agentId)).resolves.toMatchObject({ keyType: 'ec' });
  });

  test('a CSR whose signature is broken is refused', async () => {
    const pem = await csrPem();
    const der = Buffer.from(new x509.Pkcs10CertificateRequest(pem).rawData);
    der[der.length - 5] = der[der.length - 5]! ^ 0xff; // inside the signature value
    await expect(checkCsr(der, randomUUID())).rejects.toMatchObject({
      reason: 'bad-signature',
      message: expect.stringContaining('signature'),
    });
  });

  test('garbage is refused as malformed', async () => {
    await expect(
      checkCsr('-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----', randomUUID()),
    ).rejects.toMatchObject({ reason: 'malformed' });
    await expect(checkCsr(Buffer.alloc(0), randomUUID())).rejects.toMatchObject({ reason: 'malformed' });
  });

  test('an RSA-1024 key is refused', async () => {
    await expect(checkCsr(await csrPem({ algorithm: rsa(1024) }), randomUUID())).rejects.toMatchObject({
      reason: 'key-too-small',
      message: expect.stringContaining('1024 bits'),
    });
  });

  test('an EC key on another curve is refused', async () => {
    const algorithm = { name: 'ECDSA', namedCurve: 'P-521', hash: 'SHA-512' };
    await expect(checkCsr(await csrPem({ algorithm }), randomUUID())).rejects.toMatchObject({
      reason: 'unsupported-key',
    });
  });

  test("a CSR naming another agent's uid (CN or URI SAN) is refused", async () => {
    const agentId = randomUUID();
    const other = randomUUID();
    for (const pem of [
      await csrPem({ name: `CN=${other}` }),
      await csrPem({ uris: [`urn:opamp:instance-uid:${other}`] }),
      await csrPem({ uris: [`urn:fleet:agent:${TENANT}/${other}`] }),
      await csrPem({ name: `CN=${agentId}`, uris: [`urn:opamp:instance-uid:${other}`] }),
    ]) {
      await expect(checkCsr(pem, agentId)).rejects.toMatchObject({
        reason: 'instance-uid-mismatch',
        message: expect.stringContaining(other),
      });
    }
  });

  test('a certificate from another CA (even one with the same name) is refused', async () => {
    const agentId = randomUUID();
    const rogueKeys = await keys();
    const rogue = await x509.X509CertificateGenerator.createSelfSigned({
      name: ca.certificate.subject,
      keys: rogueKeys,
      signingAlgorithm: EC,
      extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
    });
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: randomBytes(16).toString('hex').replace(/^./, '1'),
      subject: `CN=${agentId}`,
      issuer: rogue.subject,
      publicKey: (await keys()).publicKey,
      signingKey: rogueKeys.privateKey,
      signingAlgorithm: EC,
      extensions: [
        new x509.SubjectAlternativeNameExtension([{ type: 'url', value: `urn:fleet:agent:${TENANT}/${agentId}` }]),
      ],
    });
    await expect(verifyAgentCertificate(database.db, ca, leaf.toString('pem'))).rejects.toMatchObject({
      reason: 'unknown-issuer',
      message: expect.stringContaining('not signed by the agent CA'),
    });
  });

  test('an expired leaf is refused', async () => {
    const leaf = await issue(randomUUID(), new Date(Date.now() - 25 * 3600_000));
    await expect(verifyAgentCertificate(database.db, ca, leaf.certificatePem)).rejects.toMatchObject({
      reason: 'expired',
      message: expect.stringContaining('expired at'),
    });
  });

  test('a revoked serial is refused (the check reads the table)', async () => {
    const agentId = randomUUID();
    const leaf = await issue(agentId);
    await expect(verifyAgentCertificate(database.db, ca, leaf.certificatePem)).resolves.toMatchObject({ agentId });
    expect(await revokeAgentCertificates(database.db, TENANT, agentId)).toEqual([leaf.serial]);
    await expect(verifyAgentCertificate(database.db, ca, leaf.certificatePem)).rejects.toMatchObject({
      reason: 'revoked',
      message: expect.stringContaining(leaf.serial),
    });
  });

  test('a leaf signed by our CA but never recorded is refused', async () => {
    const agentId = randomUUID();
    const leaf = await issue(agentId);
    await database.db('agent_certificates').where({ serial: leaf.serial }).delete();
    await expect(verifyAgentCertificate(database.db, ca, leaf.certificatePem)).rejects.toMatchObject({
      reason: 'unknown-serial',
    });
  });

  test('the CA is created once even when loaders race, and later loads return the same CA', async () => {
    const fresh = await createTestDatabase();
    const pools = [createDb(fresh.url, 2), createDb(fresh.url, 2), createDb(fresh.url, 2)];
    try {
      const loaded = await Promise.all(pools.map((db) => loadOrCreateAgentCa(db, key)));
      expect(new Set(loaded.map((c) => c.id)).size).toBe(1);
      expect(new Set(loaded.map((c) => c.certificatePem)).size).toBe(1);
      expect(await fresh.db('agent_ca').count('* as n').first()).toEqual({ n: 1 });
      expect((await loadOrCreateAgentCa(fresh.db, key)).id).toBe(loaded[0]!.id);
    } finally {
      await Promise.all(pools.map((db) => db.destroy()));
      await fresh.drop();
    }
  });

  test('the stored private key is not plaintext and decrypts only with the right key', async () => {
    const row = await database.db('agent_ca').where({ id: ca.id }).first();
    expect(row.certificate_pem).toContain('BEGIN CERTIFICATE');
    for (const value of Object.values(row)) {
      const text = Buffer.isBuffer(value) ? value.toString('latin1') : String(value);
      expect(text).not.toContain('PRIVATE KEY');
    }
    expect(row.key_iv).toHaveLength(12);
    expect(row.key_tag).toHaveLength(16);
    await expect(loadOrCreateAgentCa(database.db, randomBytes(32))).rejects.toBeInstanceOf(DecryptionError);
    // the right key gives a key that signs certificates the CA certificate verifies
    const reloaded = await loadOrCreateAgentCa(database.db, key);
    const agentId = randomUUID();
    const csr = await checkCsr(await csrPem(), agentId);
    const leaf = await issueLeafCertificate(database.db, reloaded, { tenantId: TENANT, agentId, csr, ttlHours: 1 });
    expect(
      await new x509.X509Certificate(leaf.certificatePem).verify({
        publicKey: ca.certificate.publicKey,
        signatureOnly: true,
      }),
    ).toBe(true);
  });

  test('a real TLS handshake accepts the leaf as a client certificate and the peer certificate maps to the agent, by the full check and by the fast one', async () => {
    const agentId = randomUUID();
    const clientKeys = await keys();
    const csr = await x509.Pkcs10CertificateRequestGenerator.create({
      name: 'CN=otelcol',
      keys: clientKeys,
      signingAlgorithm: EC,
    });
    const leaf = await issueLeafCertificate(database.db, ca, {
      tenantId: TENANT,
      agentId,
      csr: await checkCsr(csr.toString('pem'), agentId),
      ttlHours: 24,
    });
    const serverKeys = await keys();
    const serverCert = await x509.X509CertificateGenerator.create({
      subject: 'CN=localhost',
      issuer: ca.certificate.subjectName,
      publicKey: serverKeys.publicKey,
      signingKey: ca.privateKey,
      signingAlgorithm: caSigningAlgorithm(ca),
      extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'localhost' }])],
    });
    const server = createServer({
      cert: serverCert.toString('pem'),
      key: await pkcs8Pem(serverKeys.privateKey),
      ca: ca.certificatePem,
      requestCert: true,
      rejectUnauthorized: true,
    });
    const mapped = new Promise((resolve, reject) =>
      server.once('secureConnection', (socket: TLSSocket) => {
        const peer = socket.getPeerX509Certificate()!;
        Promise.all([verifyAgentCertificate(database.db, ca, peer.raw), verifyAuthorizedPeer(database.db, peer)])
          .then(resolve, reject)
          .finally(() => socket.end());
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = connect({
      host: '127.0.0.1',
      port: (server.address() as AddressInfo).port,
      servername: 'localhost',
      ca: ca.certificatePem,
      cert: leaf.certificatePem,
      key: await pkcs8Pem(clientKeys.privateKey),
    });
    client.on('error', () => undefined);
    try {
      const identity = { tenantId: TENANT, agentId, serial: leaf.serial };
      await expect(mapped).resolves.toEqual([identity, identity]);
    } finally {
      client.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a CA can be loaded from PEM files instead; a mismatched key or a non-CA certificate is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agent-ca-'));
    const caKeys = await keys();
    const fileCa = await x509.X509CertificateGenerator.createSelfSigned({
      name: 'CN=Operator agent CA',
      keys: caKeys,
      signingAlgorithm: EC,
      extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
    });
    const sec1 = createPrivateKey({
      key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', caKeys.privateKey)),
      format: 'der',
      type: 'pkcs8',
    }).export({ format: 'pem', type: 'sec1' }) as string;
    await writeFile(join(dir, 'ca.pem'), fileCa.toString('pem'));
    await writeFile(join(dir, 'ca.key'), sec1);
    await writeFile(join(dir, 'other.key'), await pkcs8Pem((await keys()).privateKey));
    await writeFile(join(dir, 'leaf.pem'), (await issue(randomUUID())).certificatePem);

    const loaded = await loadAgentCaFromFiles(join(dir, 'ca.pem'), join(dir, 'ca.key'));
    expect(loaded.id).toBeNull();
    const agentId = randomUUID();
    const leaf = await issueLeafCertificate(database.db, loaded, {
      tenantId: TENANT,
      agentId,
      csr: await checkCsr(await csrPem(), agentId),
      ttlHours: 1,
    });
    await expect(verifyAgentCertificate(database.db, loaded, leaf.certificatePem)).resolves.toMatchObject({ agentId });
    await expect(verifyAgentCertificate(database.db, ca, leaf.certificatePem)).rejects.toMatchObject({
      reason: 'unknown-issuer',
    });
    await expect(loadAgentCaFromFiles(join(dir, 'ca.pem'), join(dir, 'other.key'))).rejects.toMatchObject({
      reason: 'key-mismatch',
    });
    await expect(loadAgentCaFromFiles(join(dir, 'leaf.pem'), join(dir, 'ca.key'))).rejects.toMatchObject({
      reason: 'not-a-ca',
    });
  });
});

describe('commonName (the subject as Node prints it)', () => {
  test('the one CN, wherever it is among the attributes', () => {
    expect(commonName('CN=3f0c7c9e-0000-4000-8000-000000000001')).toBe('3f0c7c9e-0000-4000-8000-000000000001');
    expect(commonName('C=DE\nO=Example\nCN=otelcol')).toBe('otelcol');
  });

  test('none, or two, is no name: the fast path declines and the full check decides', () => {
    expect(commonName('O=Example')).toBeUndefined();
    expect(commonName('CN=a\nCN=b')).toBeUndefined();
    expect(commonName('')).toBeUndefined();
  });
});

async function pkcs8Pem(privateKey: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', privateKey), 'PRIVATE KEY');
}
