/**
 * Who is speaking on a connection: the client certificate checked once at the TLS handshake,
 * or behind a TLS-ending proxy the one it forwards with each request; else the bootstrap
 * token of each request or upgrade.
 */
import type { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import {
  CertificateRejectedError,
  commonName,
  handshakeRefusal,
  verifyAgentCertificate,
  verifyAuthorizedPeer,
  type AgentIdentity,
} from '../domain/certificates';
import { checkCredential, tokenFromRequest, type Credential } from './enrollment';
import { CERTIFICATE_HEADER, forwardedCertificate } from './forwarded-certificate';
import type { ListenerContext } from './listener-context';

/** A client certificate wins over a token; no credential at all is for approval mode. */
export async function credentialOf(
  ctx: ListenerContext,
  req: IncomingMessage,
): Promise<{ ok: true; credential: Credential } | { ok: false; reason: string; tokenId?: string }> {
  if (ctx.proxy) {
    const forwarded = await forwardedIdentity(ctx, ctx.proxy.ca, req);
    if (forwarded instanceof CertificateRejectedError)
      return { ok: false, reason: `certificate refused: ${forwarded.reason}` };
    if (forwarded) return { ok: true, credential: { kind: 'certificate', identity: forwarded } };
  } else {
    const identity = await ctx.certificateIdentity.get(req.socket as TLSSocket);
    if (identity) return { ok: true, credential: { kind: 'certificate', identity } };
    if (req.socket.destroyed) return { ok: false, reason: 'certificate refused' };
  }
  const token = tokenFromRequest(req);
  if (token === undefined && ctx.approval) return { ok: true, credential: { kind: 'none' } };
  return checkCredential(ctx.db, token);
}

/** At the handshake: a certificate of another CA closes the connection; ours is mapped to its agent. */
export function checkClientCertificate(ctx: ListenerContext, socket: TLSSocket): void {
  const { db, ca, logger, sessions } = ctx;
  // Not getPeerCertificate(): it computes every field, fingerprints and public key included
  // (3 % of the gateway's CPU in a reconnect storm in perf, and ~1.8 KiB kept per socket).
  const peer = socket.getPeerX509Certificate();
  if (!peer) return;
  // Our leaves name their agent in the CN; another CA's name only its holder's claim.
  const claimed = { agentId: commonName(peer.subject), serial: peer.serialNumber };
  if (!socket.authorized) {
    logger.info({ ...claimed, reason: socket.authorizationError }, 'agent certificate refused at the handshake');
    socket.destroy();
    return;
  }
  // A resumed session (session-tickets.ts) carries the certificate OpenSSL verified when the
  // session began, without checking it again: one that has expired since is refused here.
  if (socket.isSessionReused() && !validNow(peer)) {
    logger.info({ ...claimed, reason: 'CERT_HAS_EXPIRED' }, 'agent certificate refused at the handshake');
    socket.destroy();
    return;
  }
  // OpenSSL has checked chain and validity; the full check runs only for what the fast one cannot read.
  const identity = verifyAuthorizedPeer(db, peer, ctx.lookups.certificate)
    .then((found) => found ?? verifyAgentCertificate(db, ca, peer.raw))
    .then(
      (found) => {
        sessions.trackCertificateSocket(found.agentId, socket);
        return found;
      },
      (error: Error) => {
        logger.info(
          { ...claimed, reason: (error as { reason?: string }).reason ?? error.message },
          'agent certificate refused',
        );
        socket.destroy();
        return undefined;
      },
    );
  ctx.certificateIdentity.set(socket, identity);
}

/**
 * Behind a TLS-ending proxy: the agent the request's forwarded certificate names (undefined:
 * none forwarded), checked as a handshake of our own would (issuer, signature, validity),
 * then like one (serial and revocation). Each request is checked; a WebSocket's socket is
 * then the agent's alone, and a revocation closes it. A database error is thrown (the
 * transports answer it with 503), not taken for a refusal.
 */
async function forwardedIdentity(
  ctx: ListenerContext,
  caCertificate: X509Certificate,
  req: IncomingMessage,
): Promise<AgentIdentity | CertificateRejectedError | undefined> {
  const { db, ca, logger } = ctx;
  let claimed: { agentId?: string; serial?: string } = {};
  try {
    const certificate = forwardedCertificate(req.headers[CERTIFICATE_HEADER]);
    if (!certificate) return undefined;
    claimed = { agentId: commonName(certificate.subject), serial: certificate.serialNumber };
    const refusal = handshakeRefusal(certificate, caCertificate);
    if (refusal) throw refusal;
    const identity =
      (await verifyAuthorizedPeer(db, certificate, ctx.lookups.certificate)) ??
      (await verifyAgentCertificate(db, ca, certificate.raw));
    if (req.headers.upgrade !== undefined) ctx.sessions.trackCertificateSocket(identity.agentId, req.socket);
    return identity;
  } catch (error) {
    if (!(error instanceof CertificateRejectedError)) throw error;
    logger.info({ ...claimed, reason: error.reason }, 'agent certificate refused');
    return error;
  }
}

/** The certificate's validity period includes now. */
function validNow(peer: { validFrom: string; validTo: string }): boolean {
  const now = Date.now();
  return Date.parse(peer.validFrom) <= now && now <= Date.parse(peer.validTo);
}
