/**
 * The outbound destination policy as a pure decision (platform/outbound.ts connects under
 * it): an address or name in `Outbound:Deny` is refused; one in `Outbound:Allow` is
 * allowed; otherwise loopback, link-local (the cloud metadata address among them), private,
 * shared (CGNAT), multicast and reserved addresses are refused and everything else is
 * allowed. docs/decisions.md, Outbound calls.
 */
import { BlockList, isIP } from 'node:net';

/** A CIDR (`10.0.0.0/8`, `fd00::/8`), an address, a host name, or `*.` and a domain (its subdomains). */
export type OutboundRule = string;

export interface OutboundSettings {
  allow: OutboundRule[];
  deny: OutboundRule[];
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
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

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail as two of them). */
function ipv6Groups(address: string): number[] {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  let text = address;
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${address.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/**
 * An IPv6 address that carries an IPv4 one (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`)
 * is judged as that IPv4 address, however it is written (`::ffff:7f00:1` is 127.0.0.1).
 */
export function normalAddress(address: string): ResolvedAddress {
  const plain = address.replace(/^\[|\]$/g, '');
  if (isIP(plain) !== 6) return { address: plain, family: 4 };
  const groups = ipv6Groups(plain);
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0);
  if (!mapped && !nat64) return { address: plain, family: 6 };
  const [high, low] = [groups[6]!, groups[7]!];
  return { address: [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.'), family: 4 };
}

/** Address ranges, each with what it is called (a rule as written, or a built-in range's name). */
class Ranges {
  private readonly ranges: Array<{ list: BlockList; label: string }> = [];

  add(address: string, prefix: number | undefined, label: string): void {
    const list = new BlockList();
    if (prefix === undefined) {
      const one = normalAddress(address);
      list.addAddress(one.address, one.family === 6 ? 'ipv6' : 'ipv4');
    } else {
      list.addSubnet(address, prefix, isIP(address) === 6 ? 'ipv6' : 'ipv4');
    }
    this.ranges.push({ list, label });
  }

  /** What the first range holding `address` is called; undefined when none holds it. */
  match({ address, family }: ResolvedAddress): string | undefined {
    const type = family === 6 ? 'ipv6' : 'ipv4';
    return this.ranges.find(({ list }) => list.check(address, type))?.label;
  }
}

interface Rules {
  ranges: Ranges;
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
  const compiled: Rules = { ranges: new Ranges(), names: new Set(), domains: [] };
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

const builtIn = new Ranges();
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
