// Which addresses an allowed name may lead to (network allowlist, proxy.ts). A name is the
// attacker's to point anywhere (a rebinding record, a subdomain under an allowed wildcard), so the
// addresses it resolves to are refused when they are this machine's or its networks': loopback,
// private, link-local (cloud metadata) and the like, and every address of this machine's own
// interfaces, whatever its range — a service listening on all interfaces answers on those too, and
// a host with a public address on its interface would otherwise be one DNS record away.
import { BlockList, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';

function v4(address: string): number[] | null {
  const parts = address.split('.').map(Number);
  return parts.length === 4 && parts.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? parts : null;
}

/** Why an address must not be reached by name (loopback, private, link-local/metadata …), or null. */
function rangeOf(address: string): string | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const a = v4(mapped ? mapped[1]! : address);
  if (a) {
    const [x, y] = a as [number, number];
    if (x === 127) return 'a loopback address';
    if (x === 169 && y === 254) return 'a link-local address (cloud metadata lives at 169.254.169.254)';
    if (x === 10 || (x === 172 && y >= 16 && y <= 31) || (x === 192 && y === 168)) return 'a private address';
    if (x === 100 && y >= 64 && y <= 127) return 'a shared (carrier-grade NAT) address';
    if (x === 0 || x >= 224) return 'a reserved or multicast address';
    return null;
  }
  const ip = address.toLowerCase();
  if (ip === '::1' || ip === '::') return 'a loopback address';
  if (/^fe[89ab]/.test(ip)) return 'a link-local address';
  if (/^f[cd]/.test(ip)) return 'a private (unique local) address';
  if (/^ff/.test(ip)) return 'a multicast address';
  return null;
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
  const range = rangeOf(address);
  if (range) return range;
  const bare = address.replace(/%.*$/, '');
  if (ownAddresses().check(bare, isIPv6(bare) ? 'ipv6' : 'ipv4')) return "an address of this machine's own interfaces";
  return null;
}
