import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Settings } from './settings';

/**
 * Encryption at rest with Secrets:EncryptionKey: AES-256-GCM, a fresh 12-byte IV per
 * message, the 16-byte tag kept beside the ciphertext. An optional `context` is bound as
 * associated data, so a ciphertext copied into another column or row does not decrypt.
 *
 * Production requires the setting (settings.ts refuses to start without it). Only in
 * Development, without a key, a fixed development key is derived from a public constant:
 * data encrypted with it is NOT secret, and it is not logged because there is nothing
 * worth logging about it.
 */

export interface Sealed {
  iv: Buffer;
  tag: Buffer;
  ciphertext: Buffer;
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

const DEVELOPMENT_KEY = createHash('sha256').update('fleet-config development encryption key (not secret)').digest();

export class DecryptionError extends Error {
  constructor() {
    super('the data could not be decrypted: wrong key, wrong context or tampered ciphertext');
  }
}

/** The key to use: the configured one, or in Development without one, the fixed development key. */
export function encryptionKey(settings: Pick<Settings, 'encryptionKey' | 'isDevelopment'>): Buffer {
  if (settings.encryptionKey) return checkKey(settings.encryptionKey);
  if (settings.isDevelopment) return DEVELOPMENT_KEY;
  throw new Error('Secrets:EncryptionKey is required outside Development');
}

function checkKey(key: Buffer): Buffer {
  if (key.length !== KEY_BYTES) throw new Error(`the encryption key must be ${KEY_BYTES} bytes`);
  return key;
}

export function encrypt(key: Buffer, plaintext: Buffer | string, context = ''): Sealed {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', checkKey(key), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), ciphertext };
}

export function decrypt(key: Buffer, sealed: Sealed, context = ''): Buffer {
  if (sealed.iv.length !== IV_BYTES || sealed.tag.length !== TAG_BYTES) throw new DecryptionError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', checkKey(key), sealed.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
  } catch {
    throw new DecryptionError();
  }
}
