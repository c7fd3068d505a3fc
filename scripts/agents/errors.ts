/**
 * `npm run agents` with 1,000 agents against a server it cannot reach would print the same
 * error 1,000 times a second. Errors are sorted into kinds instead: the first of each kind is
 * printed once, with a hint for the common ones, and the summary line counts them by kind.
 */
import type { Refusal } from './agent-state';

export interface ErrorKind {
  /** Short and stable: the key in the summary (`untrusted-certificate=12`). */
  kind: string;
  hint?: string;
}

/** What the hints may refer to. */
export interface RunContext {
  endpoint: string;
  /** The CA file the agents trust, when one was given or found. */
  caFile?: string;
}

const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const DEV_CA = '.dev-data/agent-ca.pem';

function untrustedHint(context: RunContext): string {
  return context.caFile
    ? `the server's certificate does not chain to ${context.caFile}: is that the CA of this server? (npm run dev's is ${DEV_CA})`
    : `the server's certificate does not chain to a CA the agents trust: pass --ca <PEM of the CA that signed it> (npm run dev's is ${DEV_CA})`;
}

function hostOf(endpoint: string): string {
  const url = new URL(endpoint);
  return url.port ? `${url.hostname}:${url.port}` : url.hostname;
}

/** A network error, a TLS failure or a bad reply, by its Node error code where there is one. */
export function classifyFailure(error: Error & { code?: string }, context: RunContext): ErrorKind {
  const code = error.code;
  if (code && UNTRUSTED.has(code)) return { kind: 'untrusted-certificate', hint: untrustedHint(context) };
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return {
      kind: 'certificate-name',
      hint: `${hostOf(context.endpoint)} is not a name in the server's certificate: use a host name it was issued for (npm run dev's: localhost, 127.0.0.1)`,
    };
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return { kind: 'certificate-expired', hint: "check the clocks of both machines and the server's certificate" };
  if (code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER')
    return {
      kind: 'tls-handshake',
      hint: 'does the server speak TLS on this port? For a plain listener use ws:// or http://',
    };
  if (code === 'ECONNREFUSED')
    return {
      kind: 'connection-refused',
      hint: `nothing listens at ${hostOf(context.endpoint)}: is npm run dev running? (its agent listener is localhost:4320)`,
    };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return { kind: 'host-not-found', hint: `${hostOf(context.endpoint)} does not resolve: check --endpoint` };
  if (code === 'ETIMEDOUT' || /timed out|no reply within/i.test(error.message)) return { kind: 'timeout' };
  if (code === 'ECONNRESET' || /socket hang up/.test(error.message)) return { kind: 'connection-reset' };
  const status = /HTTP (\d{3})/.exec(error.message)?.[1];
  if (status) return { kind: `http-${status}` };
  return { kind: code ? code.toLowerCase() : 'other' };
}

/** The server said no: the agent stays down. */
export function classifyRefusal(refusal: Refusal): ErrorKind {
  if (refusal.status === 401)
    return {
      kind: 'refused-401',
      hint: 'the bootstrap token is unknown, revoked, expired or used up: issue one with POST /api/tokens and pass it as --token',
    };
  if (refusal.status === 403)
    return {
      kind: 'refused-403',
      hint: "the token is valid but may not enrol here (its tenant or group, or the agent's identity)",
    };
  if (refusal.code !== undefined)
    return {
      kind: `refused-${refusal.code}`,
      hint: 'the server closed the connection as a refusal; its reason says why (exhausted: the token has no uses left)',
    };
  return { kind: `refused-${refusal.status ?? 'other'}` };
}

/** Counts by kind; `record` answers the line to print for the first of a kind, else undefined. */
export class ErrorTally {
  private readonly counts = new Map<string, number>();

  record({ kind, hint }: ErrorKind, detail: string): string | undefined {
    const seen = this.counts.get(kind) ?? 0;
    this.counts.set(kind, seen + 1);
    if (seen > 0) return undefined;
    const lines = [`agents: ${kind}: ${detail} (the first; more of this kind are counted in the summary)`];
    if (hint) lines.push(`  hint: ${hint}`);
    return lines.join('\n');
  }

  /** `untrusted-certificate=12 refused-401=3`, or '' when nothing went wrong. */
  summary(): string {
    return [...this.counts].map(([kind, count]) => `${kind}=${count}`).join(' ');
  }
}

export function describeError(error: Error & { code?: string }): string {
  return error.code && !error.message.includes(error.code) ? `${error.message} (${error.code})` : error.message;
}
