// Which addresses an allowed name may lead to (network allowlist, proxy.ts). A name is the
// attacker's to point anywhere (a rebinding record, a subdomain under an allowed wildcard), so the
// addresses it resolves to are refused unless globally reachable: loopback, private, link-local
// (cloud metadata), the rest of IANA's special-purpose ranges, the IPv6 forms that carry one of
// those to an IPv4 gateway (NAT64, 6to4; an IPv4-mapped one is its IPv4 address), and every
// address of this machine's own interfaces, whatever its range — a service listening on all
// interfaces answers on those too, and a host with a public address on its interface would
// otherwise be one DNS record away.
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';

const LOOPBACK = 'a loopback address';
const PRIVATE = 'a private address';
const RESERVED = 'a reserved address, not reachable on the internet';

/** IPv4 ranges a name may not lead to: IANA's special-purpose registry, all but the globally reachable. */
const V4: [string, number, string][] = [
  ['0.0.0.0', 8, 'a "this network" address (0.0.0.0 reaches this machine)'],
  ['127.0.0.0', 8, LOOPBACK],
  ['169.254.0.0', 16, 'a link-local address (cloud metadata lives at 169.254.169.254)'],
  ['10.0.0.0', 8, PRIVATE],
  ['172.16.0.0', 12, PRIVATE],
  ['192.168.0.0', 16, PRIVATE],
  ['100.64.0.0', 10, 'a shared (carrier-grade NAT) address'],
  ['192.0.0.0', 24, RESERVED],
  ['192.0.2.0', 24, 'a documentation address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['192.88.99.0', 24, RESERVED],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, RESERVED],
];

/**
 * IPv6 ranges refused whole. The IPv4-mapped range is not among them: node:net's BlockList matches
 * an IPv4-mapped address (any spelling: ::ffff:7f00:1 is 127.0.0.1) against the IPv4 entries.
 */
const V6: [string, number, string][] = [
  ['::1', 128, LOOPBACK],
  ['::', 128, 'the unspecified address (it reaches this machine)'],
  // Deprecated, and Linux routes them nowhere useful; nothing public answers there.
  ['::', 96, 'an IPv4-compatible address (deprecated)'],
  ['64:ff9b:1::', 48, 'a local-use NAT64 address'],
  ['100::', 64, RESERVED],
  ['2001::', 32, 'a Teredo address (it embeds an IPv4 address)'],
  ['2001:2::', 48, 'a benchmarking address'],
  ['2001:db8::', 32, 'a documentation address'],
  ['3fff::', 20, 'a documentation address'],
  ['5f00::', 16, RESERVED],
  ['fc00::', 7, 'a private (unique local) address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address (deprecated, private)'],
  ['ff00::', 8, 'a multicast address'],
];

/** The IPv6 prefixes that carry an IPv4 address a gateway then reaches: NAT64 (RFC 6052) and 6to4. */
function embedded(net: string, prefix: number): [string, number][] {
  const [a, b, c, d] = net.split('.').map(Number) as [number, number, number, number];
  const hex = (x: number, y: number) => ((x << 8) | y).toString(16);
  return [
    [`64:ff9b::${net}`, 96 + prefix],
    [`2002:${hex(a, b)}:${hex(c, d)}::`, 16 + prefix],
  ];
}

let ranges: { list: BlockList; why: string }[] | null = null;

/** One BlockList per reason, so that a refusal says which. */
function rangeLists(): { list: BlockList; why: string }[] {
  if (ranges) return ranges;
  const byReason = new Map<string, BlockList>();
  const add = (why: string, net: string, prefix: number, family: 'ipv4' | 'ipv6') => {
    let list = byReason.get(why);
    if (!list) byReason.set(why, (list = new BlockList()));
    list.addSubnet(net, prefix, family);
  };
  for (const [net, prefix, why] of V4) {
    add(why, net, prefix, 'ipv4');
    for (const [net6, prefix6] of embedded(net, prefix)) add(`${why} (embedded in ${net6.startsWith('2002:') ? 'a 6to4' : 'a NAT64'} address)`, net6, prefix6, 'ipv6');
  }
  for (const [net, prefix, why] of V6) add(why, net, prefix, 'ipv6');
  return (ranges = [...byReason].map(([why, list]) => ({ list, why })));
}

function rangeOf(address: string, family: 'ipv4' | 'ipv6'): string | null {
  return rangeLists().find((r) => r.list.check(address, family))?.why ?? null;
}

/**
 * This machine's interface addresses, looked up at each check: a VPN or DHCP lease can add one
 * during a run. IPv4-mapped IPv6 forms match their IPv4 entry.
 */
function ownAddresses(): BlockList {
  const list = new BlockList();
  for (const info of Object.values(networkInterfaces()).flat()) {
    if (!info) continue;
    // A link-local address is refused by its range; its zone makes it no entry BlockList takes.
    const address = info.address.replace(/%.*$/, '');
    list.addAddress(address, info.family === 'IPv6' ? 'ipv6' : 'ipv4');
  }
  return list;
}

/** Why an address must not be reached by name (loopback, private, link-local/metadata, this machine's …), or null. */
export function restrictedAddress(address: string): string | null {
  // A zone (fe80::1%eth0) is no part of the address BlockList compares.
  const bare = address.replace(/%.*$/, '');
  const family = isIPv6(bare) ? 'ipv6' : isIPv4(bare) ? 'ipv4' : null;
  if (!family) return 'not an IP address';
  return rangeOf(bare, family) ?? (ownAddresses().check(bare, family) ? "an address of this machine's own interfaces" : null);
}
