// Which addresses a name on the network allowlist may lead to: refused unless globally reachable,
// in every spelling (IPv4-mapped in hex, NAT64, 6to4); public ones, and public IPv4 behind NAT64
// (what DNS64 answers on an IPv6-only network), stay reachable.
import { describe, expect, test } from 'bun:test';
import { restrictedAddress } from '../../src/sandbox/net-addresses.ts';

describe('restrictedAddress', () => {
  test('internal, reserved and embedded-internal addresses are refused, with the reason', () => {
    const refused: [string, string][] = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:7f00:1', 'loopback'],
      ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
      ['0.0.0.0', 'this network'],
      ['::', 'unspecified'],
      ['169.254.169.254', 'metadata'],
      ['::ffff:a9fe:a9fe', 'metadata'],
      ['64:ff9b::a9fe:a9fe', 'NAT64'],
      ['64:ff9b::10.1.2.3', 'NAT64'],
      ['2002:c0a8:101::1', '6to4'],
      ['::7f00:1', 'IPv4-compatible'],
      ['10.0.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.1.1', 'private'],
      ['100.100.100.200', 'carrier-grade'],
      ['192.0.0.8', 'reserved'],
      ['192.0.2.7', 'documentation'],
      ['198.19.1.1', 'benchmarking'],
      ['224.0.0.251', 'multicast'],
      ['255.255.255.255', 'reserved'],
      ['fd00::2', 'unique local'],
      ['fe80::1%eth0', 'link-local'],
      ['fec0::1', 'site-local'],
      ['ff02::1', 'multicast'],
      ['2001:db8::1', 'documentation'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
      ['64:ff9b:1::1', 'NAT64'],
      ['not-an-address', 'not an IP'],
    ];
    expect(refused.map(([a]) => [a, restrictedAddress(a)?.includes(refused.find(([b]) => b === a)![1]) ?? false])).toEqual(refused.map(([a]) => [a, true]));
  });

  test('public addresses, IPv4-mapped or behind NAT64 and 6to4 too, are not', () => {
    const reachable = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1', '2a00:1450:4001::200e'];
    expect(reachable.map((a) => [a, restrictedAddress(a)])).toEqual(reachable.map((a) => [a, null]));
  });
});
