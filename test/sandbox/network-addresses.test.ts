// Which addresses an allowed name may lead to, for real: bwrap, the relay, the proxy, curl inside. The
// name's DNS is the attacker's (a rebinding record, a subdomain under an allowed wildcard), played here
// by the proxy's lookup; the servers are real sockets on this machine.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { startProxy, type Lookup, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { allowlistExecutor, canRun, fixture, type Fixture } from './harness.ts';

const CURL = 'curl -sS --noproxy ""';

let hits = 0;
let server: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  // A development server or database listening on every interface, as they often do.
  server = Bun.serve({ hostname: '0.0.0.0', port: 0, fetch: () => (hits++, new Response('HOST SERVICE\n')) });
});
afterAll(() => server.stop(true));

let fx: Fixture;
let proxy: NetworkProxy | null = null;
beforeEach(() => {
  fx = fixture();
  hits = 0;
});
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  fx.cleanup();
});

async function run(allow: string[], lookup: Lookup, command: string) {
  proxy = await startProxy({ allow: parseAllowList(allow, String), dir: mkdtempSync(join(fx.root, 'proxy-')), lookup, source: 'the test allowlist' });
  const exec = await allowlistExecutor(fx, allow, proxy);
  return exec(command, { signal: new AbortController().signal });
}

/** This machine's IPv4 addresses other than loopback: what a name pointing here reaches. */
const own = Object.values(networkInterfaces())
  .flat()
  .filter((i) => i && i.family === 'IPv4' && !i.internal)
  .map((i) => i!.address);

describe.skipIf(!canRun)('network allowlist: the addresses an allowed name leads to', () => {
  test.skipIf(own.length === 0)("a name resolving to this machine's own address does not reach the host's services", async () => {
    const address = own[0]!;
    const result = await run([`intranet.example.test:${server.port}`], async () => [address], `${CURL} http://intranet.example.test:${server.port}/; ${CURL} -p http://intranet.example.test:${server.port}/`);
    expect(hits).toBe(0);
    expect(result.output).not.toContain('HOST SERVICE');
    expect(result.output).toContain(`resolves to ${address}`);
    expect(result.notes?.[0]).toContain(`--allow-net ${address}:${server.port}`);
  });

  test('an address that embeds a loopback, metadata or private IPv4 one, or is not globally reachable, is refused before any connection', async () => {
    const port = server.port;
    // Each resolves, through a resolver the attacker runs, to one of these.
    const answers: Record<string, string> = {
      'mapped.example.test': '::ffff:7f00:1', // 127.0.0.1, IPv4-mapped, in hex: Linux connects it to loopback
      'compat.example.test': '::7f00:1', // IPv4-compatible (deprecated)
      'nat64.example.test': '64:ff9b::a9fe:a9fe', // 169.254.169.254 through a NAT64 gateway
      'nat64private.example.test': '64:ff9b::a00:5', // 10.0.0.5 through a NAT64 gateway
      'sixtofour.example.test': '2002:7f00:1::1', // 6to4 of 127.0.0.1
      'bench.example.test': '198.18.0.1', // benchmarking range, not globally reachable
      'docs.example.test': '203.0.113.9', // documentation range
    };
    const names = Object.keys(answers);
    const command = names.map((n) => `${CURL} --max-time 5 http://${n}:${port}/`).join('; ');
    const result = await run(
      names.map((n) => `${n}:${port}`),
      async (host) => [answers[host]!],
      command,
    );
    expect(hits).toBe(0);
    expect(result.output).not.toContain('HOST SERVICE');
    expect(result.output).not.toContain('cannot connect');
    for (const name of names) expect(result.output).toContain(`resolves to ${answers[name]}, `);
    expect(result.notes?.length).toBe(names.length);
  });
});
