/**
 * Connecting under the outbound policy (outbound-rules.ts; docs/decisions.md, Outbound
 * calls): Git repositories and federation peers are addresses a tenant chose, so every
 * connection is checked on the address it actually connects to. The name is resolved here,
 * its addresses judged, and the socket connects to one that passed: a name that resolves to
 * a public address for a check and to 169.254.169.254 for the connection (DNS rebinding)
 * gets nowhere.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import pino, { type Logger } from 'pino';
import { Agent, buildConnector, fetch as undiciFetch, type RequestInit, type Response } from 'undici';
import { createOutboundRules, type OutboundSettings, type ResolvedAddress } from './outbound-rules';

export type { OutboundSettings, ResolvedAddress };

/** Resolves a host name to its addresses (the system resolver by default; tests map names themselves). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/** Why a destination was not reached: the tenant sees only OUTBOUND_UNREACHABLE, the log this. */
export class OutboundRefused extends Error {
  override readonly name = 'OutboundRefused';
  constructor(readonly detail: string) {
    super(OUTBOUND_UNREACHABLE);
  }
}

/**
 * The one answer a tenant gets for a destination that is refused or does not answer: which
 * of the two, and why (closed port, no such name, a filtered range), would make the
 * service a port scanner of the networks it sits in.
 */
export const OUTBOUND_UNREACHABLE =
  "could not be reached: the destination is not allowed by this installation's outbound policy, or did not answer";

/** A destination that accepts no connection within this long does not answer. */
export const CONNECT_TIMEOUT_MS = 4_000;

const systemResolver: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));

export interface OutboundOptions {
  /** Where refusals and failed connections are logged, with their reason (none: not logged). */
  logger?: Logger;
  /** Resolves names (the system's resolver by default). */
  resolve?: Resolver;
}

export type Outbound = ReturnType<typeof createOutbound>;

/** The policy of `settings`, with the means to connect under it. */
export function createOutbound(settings: OutboundSettings, options: OutboundOptions = {}) {
  const refusal = createOutboundRules(settings);
  const resolveName = options.resolve ?? systemResolver;
  const logger = options.logger ?? pino({ level: 'silent' });

  /**
   * The addresses of `host` that may be connected to, in the resolver's order; throws
   * OutboundRefused (logged with the reason) when there is none.
   */
  async function resolve(host: string): Promise<ResolvedAddress[]> {
    const bare = host.replace(/^\[|\]$/g, '');
    const family = isIP(bare);
    let addresses: ResolvedAddress[];
    if (family !== 0) addresses = [{ address: bare, family: family === 6 ? 6 : 4 }];
    else {
      try {
        addresses = await resolveName(bare);
      } catch (error) {
        throw refused(host, `${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
    const reasons = addresses.map((address) => refusal(bare, address));
    const allowed = addresses.filter((_, i) => reasons[i] === undefined);
    if (allowed.length > 0) return allowed;
    throw refused(host, reasons.join('; ') || `${host} has no address`);
  }

  function refused(host: string, detail: string): OutboundRefused {
    logger.warn({ host, reason: detail }, 'outbound connection refused');
    return new OutboundRefused(detail);
  }

  /** A destination that was allowed but did not answer (closed port, timeout, TLS): logged, and neutral. */
  function unreachable(destination: string, reason: string): OutboundRefused {
    logger.warn({ destination, reason }, 'outbound connection failed');
    return new OutboundRefused(`${destination}: ${reason}`);
  }

  const connector = buildConnector({ timeout: CONNECT_TIMEOUT_MS });
  /**
   * undici's connector, given a checked address instead of the name (an IP literal in the
   * URL would skip any lookup hook, so the policy resolves every host itself); TLS still
   * verifies the certificate against the name.
   */
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
    resolve(host).then(
      ([address]) =>
        connector(
          {
            ...connectOptions,
            hostname: address!.address,
            servername: connectOptions.servername ?? (isIP(host) === 0 ? host : undefined),
          },
          callback,
        ),
      (error: Error) => callback(error, null),
    );
  };
  const dispatcher = new Agent({ connect });

  /**
   * fetch under the policy. A destination that is refused or does not answer is an
   * OutboundRefused (the neutral message; the detail is logged); an answer of any status is
   * returned as it is.
   */
  async function fetch(url: URL, init: RequestInit = {}): Promise<Response> {
    try {
      return await undiciFetch(url, { ...init, dispatcher });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      const cause = (error as { cause?: unknown }).cause;
      if (cause instanceof OutboundRefused) throw cause;
      const reason = (cause as { code?: string } | undefined)?.code ?? (cause as Error | undefined)?.message;
      throw unreachable(url.origin, reason ?? String(error));
    }
  }

  return { refusal, resolve, unreachable, fetch, close: () => dispatcher.close() };
}
