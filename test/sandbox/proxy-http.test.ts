// The allowlist proxy's plain-HTTP forwarding (absolute-form requests): what the upstream server is
// asked for. Real sockets: a client on the proxy's Unix socket, an upstream on 127.0.0.1 (allowed
// literally) that says which site each request asked for.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { startProxy, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { fixture, type Fixture } from './harness.ts';

// A shared web server (a CDN edge, a virtual host): which site a request reaches is its Host header.
let upstream: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  upstream = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => new Response(`site=${req.headers.get('host')}\n`) });
});
afterAll(() => upstream.stop(true));

let fx: Fixture;
let proxy: NetworkProxy | null = null;
beforeEach(() => {
  fx = fixture();
});
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  fx.cleanup();
});

/** One request through the proxy, its whole answer. */
async function send(p: NetworkProxy, request: string): Promise<string> {
  const sock = net.connect({ path: p.socketPath });
  let text = '';
  sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
  sock.write(request);
  await new Promise((r) => sock.once('close', r));
  return text;
}

describe('network allowlist: plain HTTP through the proxy', () => {
  test('the upstream is asked for the allowed site, whatever Host header the client sent (RFC 9112 §3.2.2)', async () => {
    const allowed = `127.0.0.1:${upstream.port}`;
    proxy = await startProxy({ allow: parseAllowList([allowed], String), dir: mkdtempSync(join(fx.root, 'proxy-')), source: 'the test allowlist' });
    // Allowed: the address. Asked for: another site on the same server, and the allowlist never saw its name.
    const forged = await send(proxy, `GET http://${allowed}/ HTTP/1.1\r\nHost: other-site.example\r\nUser-Agent: t\r\n\r\n`);
    expect(forged).toContain(`site=${allowed}\n`);
    expect(forged).not.toContain('other-site');
    const twice = await send(proxy, `GET http://${allowed}/ HTTP/1.1\r\nhost : other-site.example\r\nHOST: ${allowed}\r\n\r\n`);
    expect(twice).not.toContain('other-site');
    // A lone LF, which some servers take for a line end, would smuggle a Host past the one replaced.
    const smuggled = await send(proxy, `GET http://${allowed}/ HTTP/1.1\r\nX-A: 1\nHost: other-site.example\r\n\r\n`);
    expect(smuggled).toStartWith('HTTP/1.1 400 Bad Request');
    expect(smuggled).toContain('conch proxy: the request head has a line end other than CRLF');
    // Without a Host header of its own the request still names its site.
    expect(await send(proxy, `GET http://${allowed}/x HTTP/1.1\r\n\r\n`)).toContain(`site=${allowed}\n`);
  });
});
