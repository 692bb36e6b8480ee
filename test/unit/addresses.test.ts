import { addressBudgetKey, peerBudgetKey } from '../../src/domain/addresses';

describe('the budget key of an address', () => {
  it('is an IPv4 address itself, and an IPv4 address written as IPv6 folds into it', () => {
    for (const spelling of ['198.51.100.9', '::ffff:198.51.100.9', '::FFFF:c633:6409', '0:0:0:0:0:ffff:198.51.100.9']) {
      expect(addressBudgetKey(spelling)).toBe('198.51.100.9');
    }
  });

  it('is the /64 of an IPv6 address, in one spelling', () => {
    expect(addressBudgetKey('2001:DB8:0:0:1::1')).toBe('2001:db8:0:0::/64');
    expect(addressBudgetKey('2001:0db8:0000:0000:ffff:0000:0000:0001')).toBe('2001:db8:0:0::/64');
    expect(addressBudgetKey('2001:db8:aa:bb::')).toBe('2001:db8:aa:bb::/64');
    expect(addressBudgetKey('::1')).toBe('0:0:0:0::/64');
    expect(addressBudgetKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });

  it('refuses zone ids and what is not an address', () => {
    for (const bad of ['fe80::1%eth0', '203.0.113.1, 10.0.0.1', 'localhost', '999.1.1.1', '', '1'.repeat(46)]) expect(addressBudgetKey(bad)).toBeUndefined();
  });

  it("drops a peer's zone id, which names the server's interface", () => {
    expect(peerBudgetKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(peerBudgetKey(undefined)).toBe('unknown');
  });
});
