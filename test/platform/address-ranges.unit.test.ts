import { addressRangeProblem, addressRanges } from '../../platform/address-ranges';

describe('address ranges (Agents:Tls:TerminatedBy)', () => {
  test('an address a socket reports is matched however it is written', () => {
    const ranges = addressRanges(['10.0.0.0/8', '192.0.2.7', 'fd00::/8', '[::1]']);
    for (const address of ['10.1.2.3', '::ffff:10.1.2.3', '::ffff:a01:203', '192.0.2.7', 'fd12::1', '::1'])
      expect([address, ranges.holds(address)]).toEqual([address, true]);
    for (const address of ['11.0.0.1', '192.0.2.8', '::ffff:192.0.2.8', 'fe80::1', '::2', '127.0.0.1'])
      expect([address, ranges.holds(address)]).toEqual([address, false]);
  });

  test('only addresses and CIDRs are ranges', () => {
    expect(addressRangeProblem('10.0.0.0/8')).toBeUndefined();
    expect(addressRangeProblem('[fd00::1]')).toBeUndefined();
    expect(addressRangeProblem('fd00::/129')).toBe('fd00::/129 is not a CIDR');
    expect(addressRangeProblem('10.0.0.0/8/1')).toBe('10.0.0.0/8/1 is neither an IP address nor a CIDR');
    expect(addressRangeProblem('lb.internal')).toBe('lb.internal is neither an IP address nor a CIDR');
    expect(addressRangeProblem('10.0.0.0/x')).toBe('10.0.0.0/x is not a CIDR');
  });
});
