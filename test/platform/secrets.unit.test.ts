import { randomBytes } from 'node:crypto';
import { DecryptionError, decrypt, encrypt, encryptionKey } from '../../platform/secrets';

describe('secrets (AES-256-GCM)', () => {
  const key = randomBytes(32);

  test('round-trips, with a fresh IV each time and no plaintext in the ciphertext', () => {
    const a = encrypt(key, 'hunter2 hunter2 hunter2');
    const b = encrypt(key, 'hunter2 hunter2 hunter2');
    expect(a.iv).toHaveLength(12);
    expect(a.tag).toHaveLength(16);
    expect(a.iv.equals(b.iv)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.ciphertext.toString('latin1')).not.toContain('hunter2');
    expect(decrypt(key, a).toString()).toBe('hunter2 hunter2 hunter2');
  });

  test('a wrong key, a wrong context or a flipped bit does not decrypt', () => {
    const sealed = encrypt(key, Buffer.from('secret'), 'agent-ca:private-key');
    expect(() => decrypt(randomBytes(32), sealed, 'agent-ca:private-key')).toThrow(DecryptionError);
    expect(() => decrypt(key, sealed, 'git:credentials')).toThrow(DecryptionError);
    const tampered = { ...sealed, ciphertext: Buffer.from(sealed.ciphertext) };
    tampered.ciphertext[0] = tampered.ciphertext[0]! ^ 1;
    expect(() => decrypt(key, tampered, 'agent-ca:private-key')).toThrow(DecryptionError);
    expect(() => decrypt(key, { ...sealed, tag: sealed.tag.subarray(0, 8) }, 'agent-ca:private-key')).toThrow(
      DecryptionError,
    );
    expect(decrypt(key, sealed, 'agent-ca:private-key').toString()).toBe('secret');
  });

  test('the key must be 32 bytes', () => {
    expect(() => encrypt(randomBytes(16), 'x')).toThrow('32 bytes');
  });

  test('the configured key is used; Development without one gets a fixed key; otherwise it is an error', () => {
    expect(encryptionKey({ encryptionKey: key, isDevelopment: false })).toBe(key);
    const dev = encryptionKey({ encryptionKey: undefined, isDevelopment: true });
    expect(dev).toHaveLength(32);
    expect(encryptionKey({ encryptionKey: undefined, isDevelopment: true }).equals(dev)).toBe(true);
    expect(() => encryptionKey({ encryptionKey: undefined, isDevelopment: false })).toThrow('Secrets:EncryptionKey');
  });
});
