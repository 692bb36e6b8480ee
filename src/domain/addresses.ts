import { isIPv4, isIPv6 } from 'node:net';

/** The 8 groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail read as two groups). */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').flatMap((g) => {
    if (!g.includes('.')) return [parseInt(g, 16)];
    const [a, b, c, d] = g.split('.').map(Number);
    return [(a << 8) | b, (c << 8) | d];
  }));
  const left = parse(head);
  if (tail === undefined) return left;
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * What the per-address budgets (failed sign-ins, registrations, emails) count an address as: its
 * bytes, not its spelling. An IPv4 address as itself; an IPv4 address written as IPv6
 * (`::ffff:192.0.2.7`, `::ffff:c000:207`) as that IPv4 address; any other IPv6 address as its /64
 * network (`2001:db8:0:1::/64`), which one subscriber usually holds whole, in its one canonical
 * spelling. Undefined for anything else, and for an address with a zone id (`fe80::1%eth0`).
 */
export function addressBudgetKey(raw: string): string | undefined {
  if (raw.length > 45 || raw.includes('%')) return undefined;
  if (isIPv4(raw)) return raw;
  if (!isIPv6(raw)) return undefined;
  const groups = ipv6Groups(raw.toLowerCase());
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/**
 * The budget key of the address a connection came from (Express's req.ip): a link-local
 * address's zone id (a property of the server's interface, not of the client) is dropped.
 */
export const peerBudgetKey = (ip: string | undefined): string => (ip === undefined ? 'unknown' : addressBudgetKey(ip.split('%')[0]) ?? 'unknown');
