/**
 * Addresses and CIDR ranges, IPv4 and IPv6, matched however an address is written: an IPv6
 * address that carries an IPv4 one is judged as that IPv4 address. The outbound policy
 * (outbound-rules.ts) and the agent listener's trusted proxies (Agents:Tls:TerminatedBy) use them.
 */
import { BlockList, isIP } from 'node:net';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

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
export class AddressRanges {
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

  /** Whether a range holds `address` (as a socket reports it, e.g. `::ffff:10.0.0.7`). */
  holds(address: string): boolean {
    return this.match(normalAddress(address)) !== undefined;
  }

  /** What the first range holding `address` is called; undefined when none holds it. */
  match({ address, family }: ResolvedAddress): string | undefined {
    const type = family === 6 ? 'ipv6' : 'ipv4';
    return this.ranges.find(({ list }) => list.check(address, type))?.label;
  }
}

/** Why `rule` is neither an address nor a CIDR (undefined: it is one); Settings refuse a bad value at start. */
export function addressRangeProblem(rule: string): string | undefined {
  const [address, prefix, more] = rule.split('/');
  const family = isIP((address ?? '').replace(/^\[|\]$/g, ''));
  if (family === 0 || more !== undefined) return `${rule} is neither an IP address nor a CIDR`;
  if (prefix === undefined) return undefined;
  const bits = /^\d+$/.test(prefix) ? Number(prefix) : Infinity;
  return bits > (family === 4 ? 32 : 128) ? `${rule} is not a CIDR` : undefined;
}

/** The ranges of `rules` (each an address or a CIDR, as addressRangeProblem accepts), each labelled by itself. */
export function addressRanges(rules: readonly string[]): AddressRanges {
  const ranges = new AddressRanges();
  for (const rule of rules) {
    const [address, prefix] = rule.split('/');
    ranges.add(address!.replace(/^\[|\]$/g, ''), prefix === undefined ? undefined : Number(prefix), rule);
  }
  return ranges;
}
