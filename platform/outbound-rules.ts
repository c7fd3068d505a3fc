/**
 * The outbound destination policy as a pure decision (platform/outbound.ts connects under
 * it): an address or name in `Outbound:Deny` is refused; one in `Outbound:Allow` is
 * allowed; otherwise loopback, link-local (the cloud metadata address among them), private,
 * shared (CGNAT), multicast and reserved addresses are refused and everything else is
 * allowed. docs/decisions.md, Outbound calls.
 */
import { isIP } from 'node:net';
import { AddressRanges, normalAddress, type ResolvedAddress } from './address-ranges';

export type { ResolvedAddress };

/** A CIDR (`10.0.0.0/8`, `fd00::/8`), an address, a host name, or `*.` and a domain (its subdomains). */
export type OutboundRule = string;

export interface OutboundSettings {
  allow: OutboundRule[];
  deny: OutboundRule[];
}

/** Ranges refused unless `Outbound:Allow` names them. */
const BUILT_IN_DENIED: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'this network'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'protocol assignments'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'IPv4-compatible'],
  ['::ffff:0:0:0', 96, 'IPv4-translated'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

interface Rules {
  ranges: AddressRanges;
  names: Set<string>;
  /** `.example.com` for `*.example.com`. */
  domains: string[];
}

/** Why `rule` is not a rule (undefined: it is one); Settings use it to refuse a bad value at start. */
export function outboundRuleProblem(rule: string): string | undefined {
  const [address, prefix, more] = rule.split('/');
  const family = isIP(address ?? '');
  if (prefix !== undefined && family !== 0 && more === undefined) {
    const bits = /^\d+$/.test(prefix) ? Number(prefix) : Infinity;
    return bits > (family === 4 ? 32 : 128) ? `${rule} is not a CIDR` : undefined;
  }
  if (isIP(rule.replace(/^\[|\]$/g, '')) !== 0) return undefined;
  if (/^(\*\.)?[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/i.test(rule)) return undefined;
  return `${rule} is neither a CIDR, an address nor a host name (*.example.com for its subdomains)`;
}

function compile(rules: readonly OutboundRule[]): Rules {
  const compiled: Rules = { ranges: new AddressRanges(), names: new Set(), domains: [] };
  for (const rule of rules) {
    const [address, prefix] = rule.split('/');
    if (prefix !== undefined) compiled.ranges.add(address!, Number(prefix), rule);
    else if (isIP(rule.replace(/^\[|\]$/g, '')) !== 0) compiled.ranges.add(rule, undefined, rule);
    else if (rule.startsWith('*.')) compiled.domains.push(rule.slice(1).toLowerCase());
    else compiled.names.add(rule.toLowerCase());
  }
  return compiled;
}

function namedBy(rules: Rules, host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return rules.names.has(name) || rules.domains.some((domain) => name.endsWith(domain));
}

const builtIn = new AddressRanges();
for (const [address, prefix, label] of BUILT_IN_DENIED) builtIn.add(address, prefix, label);

/** The policy of `settings`: `refusal(host, address)` says why a connection is refused (undefined: allowed). */
export function createOutboundRules(settings: OutboundSettings) {
  const allow = compile(settings.allow);
  const deny = compile(settings.deny);
  return function refusal(host: string, resolved: ResolvedAddress): string | undefined {
    const address = normalAddress(resolved.address);
    if (namedBy(deny, host)) return `${host} is in Outbound:Deny`;
    const denied = deny.ranges.match(address);
    if (denied) return `${address.address} is in Outbound:Deny (${denied})`;
    if (namedBy(allow, host) || allow.ranges.match(address)) return undefined;
    const range = builtIn.match(address);
    return range ? `${address.address} is ${range}, which Outbound:Allow does not name` : undefined;
  };
}
