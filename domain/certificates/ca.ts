import { readFile } from 'node:fs/promises';
import { createPrivateKey } from 'node:crypto';
import type { Knex } from 'knex';
import { AgentCertificateError, webcrypto, x509 } from './x509';
import { decrypt, encrypt, encryptionKey } from '../../platform/secrets';
import type { Settings } from '../../platform/settings';
import { findActiveAgentCa, insertAgentCa, lockAgentCa, type AgentCaRow } from '../../db/repos/agent-ca';

type CryptoKey = webcrypto.CryptoKey;

/** The CA that signs agents' client certificates; `certificatePem` is the TLS listener's `ca`. */
export interface AgentCa {
  /** The agent_ca row id, or null when the CA was loaded from files. */
  id: string | null;
  certificate: x509.X509Certificate;
  certificatePem: string;
  privateKey: CryptoKey;
}

export const CA_SUBJECT = 'CN=Fleet Config agent CA';
const CA_VALIDITY_YEARS = 10;
/** Binds the encrypted key to its purpose (AES-GCM associated data). */
const KEY_CONTEXT = 'agent-ca:private-key';
const SIGNING = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/**
 * Loads the installation's CA or, on first start, creates it. Replicas starting at once
 * are serialised by a transaction-scoped advisory lock, so exactly one creates the CA and
 * the others read the row it committed.
 */
export async function loadOrCreateAgentCa(db: Knex, encryptionKey: Buffer): Promise<AgentCa> {
  const row = await db.transaction(async (trx) => {
    await lockAgentCa(trx);
    return (await findActiveAgentCa(trx)) ?? insertAgentCa(trx, await newCaRow(encryptionKey));
  });
  return fromRow(row, encryptionKey);
}

/**
 * The agents' CA this installation signs with: the operator's (Agents:Ca:CertificateFile and
 * KeyFile), else its own, kept encrypted in the database and created on first use.
 */
export async function loadAgentCa(
  db: Knex,
  settings: Pick<Settings, 'agents' | 'encryptionKey' | 'isDevelopment'>,
): Promise<AgentCa> {
  const files = settings.agents.ca;
  return files
    ? loadAgentCaFromFiles(files.certificateFile, files.keyFile)
    : loadOrCreateAgentCa(db, encryptionKey(settings));
}

/**
 * The PEM agents (and a peer's handover offer) must trust for this installation's listener:
 * the agents' CA, from the operator's file (Agents:Ca:CertificateFile) or the one
 * kept in the database, created if this installation has none yet. Public: what
 * `GET /api/agents/ca.pem` and `npm run fleet -- export-ca` hand out.
 */
export async function agentCaCertificatePem(
  db: Knex,
  settings: Pick<Settings, 'agents' | 'encryptionKey' | 'isDevelopment'>,
): Promise<string> {
  if (settings.agents.ca) return readFile(settings.agents.ca.certificateFile, 'utf8');
  const row = await findActiveAgentCa(db);
  if (row) return row.certificate_pem;
  return (await loadOrCreateAgentCa(db, encryptionKey(settings))).certificatePem;
}

/**
 * A new self-signed CA (ECDSA P-256; basicConstraints cA, pathLen 0; keyCertSign, cRLSign)
 * named `name` (an X.500 name, `CN=…`), valid over the given period.
 */
export async function createSelfSignedCa(
  name: string,
  validity: { notBefore: Date; notAfter: Date },
): Promise<{ keys: webcrypto.CryptoKeyPair; certificate: x509.X509Certificate }> {
  const keys = await webcrypto.subtle.generateKey(SIGNING, true, ['sign', 'verify']);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name,
    keys,
    signingAlgorithm: SIGNING,
    ...validity,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { keys, certificate };
}

async function newCaRow(encryptionKey: Buffer) {
  const notBefore = new Date(Date.now() - 60 * 60 * 1000); // tolerate clock skew on agents
  const notAfter = new Date(notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CA_VALIDITY_YEARS);
  const { keys, certificate } = await createSelfSignedCa(CA_SUBJECT, { notBefore, notAfter });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const sealed = encrypt(encryptionKey, pkcs8, KEY_CONTEXT);
  return {
    certificate_pem: certificate.toString('pem'),
    key_iv: sealed.iv,
    key_tag: sealed.tag,
    key_ciphertext: sealed.ciphertext,
  };
}

async function fromRow(row: AgentCaRow, encryptionKey: Buffer): Promise<AgentCa> {
  const pkcs8 = decrypt(
    encryptionKey,
    { iv: row.key_iv, tag: row.key_tag, ciphertext: row.key_ciphertext },
    KEY_CONTEXT,
  );
  const certificate = new x509.X509Certificate(row.certificate_pem);
  return {
    id: row.id,
    certificate,
    certificatePem: row.certificate_pem,
    privateKey: await importSigningKey(certificate, pkcs8),
  };
}

/**
 * Loads an operator-provided CA from PEM files (certificate; unencrypted private key in
 * PKCS#8, SEC1 or PKCS#1 form). Not wired to settings yet: see docs/agents-ca.md.
 */
export async function loadAgentCaFromFiles(certificateFile: string, keyFile: string): Promise<AgentCa> {
  const certificatePem = await readFile(certificateFile, 'utf8');
  const certificate = new x509.X509Certificate(certificatePem);
  const basic = certificate.getExtension(x509.BasicConstraintsExtension);
  if (!basic?.ca)
    throw new AgentCertificateError(
      'not-a-ca',
      `${certificateFile} is not a CA certificate (basicConstraints cA is not set)`,
    );
  const pkcs8 = createPrivateKey(await readFile(keyFile, 'utf8')).export({ format: 'der', type: 'pkcs8' });
  const privateKey = await importSigningKey(certificate, pkcs8);
  await assertKeyMatches(certificate, privateKey);
  return { id: null, certificate, certificatePem: certificate.toString('pem'), privateKey };
}

/** Imports the CA key with the signing algorithm its certificate's public key implies. */
async function importSigningKey(certificate: x509.X509Certificate, pkcs8: Buffer): Promise<CryptoKey> {
  const algorithm = certificate.publicKey.algorithm as { name: string; namedCurve?: string };
  const params =
    algorithm.name === 'ECDSA'
      ? { name: 'ECDSA', namedCurve: algorithm.namedCurve! }
      : algorithm.name === 'RSASSA-PKCS1-v1_5'
        ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
        : undefined;
  if (!params)
    throw new AgentCertificateError(
      'unsupported-key',
      `CA key algorithm ${algorithm.name} is not supported (use EC or RSA)`,
    );
  return webcrypto.subtle.importKey('pkcs8', pkcs8, params, false, ['sign']);
}

/** The signing algorithm for certificates issued with this CA key. */
export function caSigningAlgorithm(ca: Pick<AgentCa, 'privateKey'>): { name: string; hash: string } {
  const algorithm = ca.privateKey.algorithm as { name: string; namedCurve?: string };
  if (algorithm.name !== 'ECDSA') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  return { name: 'ECDSA', hash: algorithm.namedCurve === 'P-384' ? 'SHA-384' : 'SHA-256' };
}

async function assertKeyMatches(certificate: x509.X509Certificate, privateKey: CryptoKey): Promise<void> {
  const probe = await x509.X509CertificateGenerator.create({
    subject: 'CN=probe',
    issuer: certificate.subjectName,
    publicKey: certificate.publicKey,
    signingKey: privateKey,
    signingAlgorithm: caSigningAlgorithm({ privateKey }),
  });
  const ok = await probe.verify({ publicKey: certificate.publicKey, signatureOnly: true });
  if (!ok) throw new AgentCertificateError('key-mismatch', 'the CA private key does not belong to the CA certificate');
}
