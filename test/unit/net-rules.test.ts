// isIpLiteral is node:net's isIP, loaded late (net-rules.ts loads on every start, node:net would
// bring node:stream with it): the same answer for every kind of host text.
import { describe, expect, test } from 'bun:test';
import { isIP } from 'node:net';
import { isIpLiteral, parseRule } from '../../src/sandbox/net-rules.ts';

const SAMPLES = [
  '127.0.0.1', '0.0.0.0', '255.255.255.255', '256.1.1.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '0x7f.0.0.1', '1.2.3.04',
  '::', '::1', '1::', 'fe80::1', 'FE80::ABCD', '2001:db8::', 'fe80::1%eth0', 'fe80::1%', 'fe80::1%eth0/1', '1.2.3.4%eth0',
  '::ffff:1.2.3.4', '::ffff:01.2.3.4', '::ffff:256.1.1.1', '::ffff:1.2.3', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7::', '::1:2:3:4:5:6:7', '1::2::3', '12345::1', 'g::1', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4',
  ':1', '1:', '[::1]', '::1 ', ' ::1', '1.2.3.4:80', 'localhost', 'example.org', 'xn--bcher-kva.example', '',
];

describe('isIpLiteral', () => {
  test('agrees with node:net isIP on IPv4, IPv6, zones, malformed literals and names', () => {
    expect(SAMPLES.map((host) => [host, isIpLiteral(host)])).toEqual(SAMPLES.map((host) => [host, isIP(host) !== 0]));
  });

  test('an allowlist entry with an IP literal is a literal rule, a name is not', () => {
    expect(parseRule('[::1]:8080')).toMatchObject({ host: '::1', port: 8080, literal: true });
    expect(parseRule('10.0.0.1')).toMatchObject({ host: '10.0.0.1', literal: true });
    expect(parseRule('registry.npmjs.org')).toMatchObject({ literal: false });
  });

  test('an entry that ends in a number is neither a name nor an IP literal: a port given alone, a shortened address', () => {
    for (const entry of ['8080', '127.1', '10.0.0', '*.8080', 'example.123:443']) {
      expect(() => parseRule(entry)).toThrow('ends in a number, so it is no host name, and it is no whole IP address either; a port goes after its host (127.0.0.1:8080).');
    }
    expect(parseRule('127.0.0.1:8080')).toMatchObject({ host: '127.0.0.1', port: 8080, literal: true });
    expect(parseRule('s3.eu-1.example.org')).toMatchObject({ literal: false });
    expect(parseRule('1password.com')).toMatchObject({ host: '1password.com', literal: false });
  });
});
