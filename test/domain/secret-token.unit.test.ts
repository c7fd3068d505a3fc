import { crc32 } from 'node:zlib';
import { base32, generateToken, hashToken, isWellFormed } from '../../domain/tokens/secret-token';

describe('secret tokens', () => {
  test('a PAT is svc-pat.<32 base32>.<7 base32 CRC-32 of the rest>', () => {
    const token = generateToken('svc-pat');
    expect(token).toMatch(/^svc-pat\.[a-z2-7]{32}\.[a-z2-7]{7}$/);
    const body = token.slice(0, token.lastIndexOf('.'));
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    expect(token.endsWith(`.${base32(crc)}`)).toBe(true);
    expect(isWellFormed('svc-pat', token)).toBe(true);
  });

  test('base32 follows RFC 4648 (lower case, no padding)', () => {
    expect(base32(Buffer.from('foobar'))).toBe('mzxw6ytboi');
    expect(base32(Buffer.from('f'))).toBe('my');
  });

  test('a changed character, a wrong prefix or a wrong shape fails the check', () => {
    const token = generateToken('svc-pat');
    const i = 10;
    const flipped = token.slice(0, i) + (token[i] === 'a' ? 'b' : 'a') + token.slice(i + 1);
    expect(isWellFormed('svc-pat', flipped)).toBe(false);
    expect(isWellFormed('svc-bt', token)).toBe(false);
    expect(isWellFormed('svc-pat', `${token}x`)).toBe(false);
    expect(isWellFormed('svc-pat', token.toUpperCase())).toBe(false);
  });

  test('tokens are unique and only their SHA-256 is kept', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => generateToken('svc-bt')));
    expect(tokens.size).toBe(1000);
    expect(hashToken('x').toString('hex')).toBe('2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881');
  });
});
