import { decrypt, encrypt } from '../../platform/secrets';

/**
 * What a handover offers each of its agents through OpAMP connection settings: the
 * receiver's agent endpoint, the CA that signed the receiver listener's certificate, and the
 * bootstrap token the receiver issued for exactly these agents. It holds a secret (the
 * token), so it is stored sealed on the handover row, bound to the handover's id.
 */
export interface HandoverOffer {
  /** The receiver's OpAMP endpoint (ws:// or wss:// …/v1/opamp). */
  endpoint: string;
  /** PEM of the CA the agent must trust for the receiver's listener. */
  caPem: string;
  /** `svc-bt.…`, sent by the agent as `Authorization: Bearer` to the receiver. */
  token: string;
}

/**
 * The CAs an offer tells the agent to trust: the receiver's, then this installation's. An
 * agent that applies only part of an offer (opamp-go's example agent takes the CA and ignores
 * the endpoint and the token) keeps connecting here, and still trusts this listener; one that
 * moves trusts the receiver's.
 */
export const offeredCaBundle = (receiverCaPem: string, senderCaPem: string) =>
  `${receiverCaPem.trim()}\n${senderCaPem.trim()}\n`;

export interface SealedOffer {
  offer_iv: Buffer;
  offer_tag: Buffer;
  offer_ciphertext: Buffer;
}

const context = (handoverId: string) => `handover:${handoverId}:offer`;

export function sealOffer(key: Buffer, handoverId: string, offer: HandoverOffer): SealedOffer {
  const sealed = encrypt(key, JSON.stringify(offer), context(handoverId));
  return { offer_iv: sealed.iv, offer_tag: sealed.tag, offer_ciphertext: sealed.ciphertext };
}

export function openOffer(key: Buffer, handoverId: string, sealed: SealedOffer): HandoverOffer {
  const clear = decrypt(
    key,
    { iv: sealed.offer_iv, tag: sealed.offer_tag, ciphertext: sealed.offer_ciphertext },
    context(handoverId),
  );
  return JSON.parse(clear.toString('utf8')) as HandoverOffer;
}
