/**
 * An outbound policy whose names the test resolves itself, so that no test looks a name up
 * outside the machine or sends anything off loopback: `metadata.test` and `intranet.test`
 * stand for the addresses an attacker aims at (the cloud metadata service, a private
 * network), and are refused before any connection; `git.test` and `peer.test` are loopback,
 * allowed by the suite's Outbound:Allow.
 */
import type { Logger } from 'pino';
import { createOutbound, type Outbound, type ResolvedAddress } from '../../platform/outbound';

export const TEST_NAMES: Record<string, string> = {
  'metadata.test': '169.254.169.254',
  'intranet.test': '10.0.0.1',
  'git.test': '127.0.0.1',
  'peer.test': '127.0.0.1',
  localhost: '127.0.0.1',
};

/** Resolves TEST_NAMES; any other name does not exist. */
export async function testResolver(host: string): Promise<ResolvedAddress[]> {
  const address = TEST_NAMES[host.toLowerCase()];
  if (address) return [{ address, family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
}

/** The suite's policy (loopback allowed, as testSettings has it) over the test's names. */
export function testOutbound(logger?: Logger, allow: string[] = ['127.0.0.0/8']): Outbound {
  return createOutbound({ allow, deny: [] }, { logger, resolve: testResolver });
}
