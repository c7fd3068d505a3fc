import type { PeerRow } from '../../db/repos/federation-peers';
import { decrypt, encrypt } from '../../platform/secrets';
import type { PeerEndpoint } from '../../platform/peer-client';

/**
 * A peer's credential (the `peer` PAT the other installation issued us) is write-only:
 * sealed with Secrets:EncryptionKey, bound to the peer's id, never returned by the API.
 */
export type SealedPeerCredential = Pick<PeerRow, 'credential_iv' | 'credential_tag' | 'credential_ciphertext'>;

const context = (peerId: string) => `federation-peer:${peerId}:credential`;

export function sealPeerCredential(key: Buffer, peerId: string, token: string): SealedPeerCredential {
  const sealed = encrypt(key, token, context(peerId));
  return { credential_iv: sealed.iv, credential_tag: sealed.tag, credential_ciphertext: sealed.ciphertext };
}

/** Where to call the peer, with its credential in clear (for the call only; never logged). */
export function peerEndpoint(
  key: Buffer,
  row: Pick<PeerRow, 'id' | 'name' | 'base_url'> & SealedPeerCredential,
): PeerEndpoint {
  const token = decrypt(
    key,
    { iv: row.credential_iv, tag: row.credential_tag, ciphertext: row.credential_ciphertext },
    context(row.id),
  ).toString('utf8');
  return { name: row.name, baseUrl: row.base_url, token };
}
