// The allowlist proxy's bounds on the phases before a tunnel is up: the request head (time and
// size), the lookup and the connect. Real sockets: clients on the proxy's Unix socket, upstreams on
// 127.0.0.1 (allowed literally), and one sandboxed client through the relay. The timeouts are the
// proxy's own parameters, made short here; the production defaults are the same code path.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { startProxy, type Lookup, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { allowlistExecutor, canRun, fixture, type Fixture } from './harness.ts';

const SHORT = { headMs: 150, connectMs: 150 };
/** Longer than any short timeout by far: how long a test waits for what the proxy should have done. */
const WAIT = 10_000;

let fx: Fixture;
let proxy: NetworkProxy | null = null;
const cleanups: (() => void)[] = [];
beforeEach(() => {
  fx = fixture();
});
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  for (const c of cleanups.splice(0)) c();
  fx.cleanup();
});

async function start(allow: string[], options: { lookup?: Lookup; timeouts?: Partial<typeof SHORT> } = {}): Promise<NetworkProxy> {
  proxy = await startProxy({ allow: parseAllowList(allow, String), dir: mkdtempSync(join(fx.root, 'proxy-')), source: 'the test allowlist', ...options });
  return proxy;
}

/**
 * What the proxy sends on `sock` until it ends its side (null if it does not within WAIT), and
 * whether it closed the socket whole: a write after its end fails only if it did, a half-open one
 * takes it.
 */
async function answer(sock: net.Socket): Promise<{ text: string; closed: boolean } | null> {
  let text = '';
  sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
  const ended = await Promise.race([new Promise((r) => sock.once('end', () => r(true))), Bun.sleep(WAIT).then(() => false)]);
  if (!ended) return null;
  const closed = new Promise((r) => sock.once('close', () => r(true)));
  sock.on('error', () => {});
  // Again and again: the proxy closes just after its end was written, a first write may come before.
  const probe = setInterval(() => sock.destroyed || sock.write('x'), 20);
  const whole = await Promise.race([closed, Bun.sleep(1000).then(() => false)]);
  clearInterval(probe);
  return { text, closed: whole === true };
}

/** A client of the proxy's socket that keeps its own side open after the proxy's end, as a sandboxed one may. */
function client(p: NetworkProxy, request: string): net.Socket {
  const sock = net.connect({ path: p.socketPath, allowHalfOpen: true });
  cleanups.push(() => sock.destroy());
  sock.write(request);
  return sock;
}

/** A listener on 127.0.0.1 whose accept queue is full, so that a further connect is never answered. */
async function unanswered(): Promise<number> {
  const perl = Bun.spawn(['perl', '-MSocket', '-e', 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die; bind($s, sockaddr_in(0, INADDR_LOOPBACK)) or die; listen($s, 0) or die; $| = 1; print((sockaddr_in(getsockname($s)))[0], "\\n"); sleep 60;'], { stdout: 'pipe' });
  cleanups.push(() => perl.kill());
  const port = Number(new TextDecoder().decode((await perl.stdout.getReader().read()).value).trim());
  // listen(0) queues one connection it never accepts; Linux drops the SYNs of any further one.
  const filler = net.connect({ host: '127.0.0.1', port });
  cleanups.push(() => filler.destroy());
  await new Promise((r) => filler.once('connect', r));
  return port;
}

/** Sockets of this network namespace still trying to connect (SYN_SENT) to 127.0.0.1:`port`. */
function connecting(port: number): number {
  const remote = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'latin1')
    .split('\n')
    .filter((line) => line.trim().split(/\s+/)[2] === remote && line.trim().split(/\s+/)[3] === '02').length;
}

describe('network proxy: the phases before a tunnel are bounded', () => {
  test('a client that sends half a request line and nothing more gets 408, and its socket is closed', async () => {
    const p = await start(['example.test:443'], { timeouts: SHORT });
    const got = await answer(client(p, 'CONNECT example.test:443 HTTP/1.1\r\n'));
    expect(got?.text).toStartWith('HTTP/1.1 408 Request Timeout\r\n');
    expect(got?.text).toContain('no complete request head within 0.15 s');
    expect(got?.closed).toBe(true);
  });

  test('a client that ends its side before the head is complete gets 400 then, not at the timeout', async () => {
    const p = await start(['example.test:443']);
    const sock = client(p, 'CONNECT example.test:443 HTTP/1.1\r\n');
    sock.end();
    const got = await answer(sock);
    expect(got?.text).toStartWith('HTTP/1.1 400 Bad Request\r\n');
    expect(got?.text).toContain('the request head ended incomplete');
  });

  test('a head past 64 KiB gets 431, also when its end arrives in the chunk that passes the limit', async () => {
    const p = await start(['example.test:443']);
    const big = `CONNECT example.test:443 HTTP/1.1\r\nX-Pad: ${'a'.repeat(60 * 1024)}`;
    const sock = client(p, big);
    await Bun.sleep(50);
    sock.write(`${'b'.repeat(10 * 1024)}\r\n\r\n`);
    const got = await answer(sock);
    expect(got?.text).toStartWith('HTTP/1.1 431 Request Header Fields Too Large\r\n');
    expect(got?.closed).toBe(true);
  });

  test('a name that does not resolve in time gets 504, and its socket is closed', async () => {
    const never: Lookup = () => new Promise(() => {});
    const p = await start(['slow.example.test:443'], { lookup: never, timeouts: SHORT });
    const got = await answer(client(p, 'CONNECT slow.example.test:443 HTTP/1.1\r\nHost: slow.example.test:443\r\n\r\n'));
    expect(got?.text).toStartWith('HTTP/1.1 504 Gateway Timeout\r\n');
    expect(got?.text).toContain('slow.example.test:443 did not resolve within 0.15 s');
    expect(got?.closed).toBe(true);
  });

  test('an address that does not accept in time gets 504, and the connect attempt is abandoned', async () => {
    const port = await unanswered();
    const p = await start([`127.0.0.1:${port}`], { timeouts: SHORT });
    const got = await answer(client(p, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`));
    expect(got?.text).toStartWith('HTTP/1.1 504 Gateway Timeout\r\n');
    expect(got?.text).toContain(`127.0.0.1:${port} did not accept the connection within 0.15 s`);
    expect(got?.closed).toBe(true);
    expect(connecting(port)).toBe(0);
  });

  test('a refused request gets 403 and its socket is closed, not left half-open', async () => {
    const p = await start(['example.test:443']);
    const got = await answer(client(p, 'CONNECT other.example.test:443 HTTP/1.1\r\n\r\n'));
    expect(got?.text).toStartWith('HTTP/1.1 403 Forbidden\r\n');
    expect(got?.closed).toBe(true);
  });

  test('an established tunnel idle for many times every timeout is not cut', async () => {
    const echo = net.createServer((s) => s.pipe(s));
    cleanups.push(() => echo.close());
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    const port = (echo.address() as net.AddressInfo).port;
    const p = await start([`127.0.0.1:${port}`], { timeouts: { headMs: 300, connectMs: 300 } });
    const sock = client(p, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    let text = '';
    sock.on('data', (d: Buffer) => (text += d.toString('latin1')));
    const until = async (want: string) => {
      for (let i = 0; i < WAIT / 10 && !text.includes(want); i++) await Bun.sleep(10);
    };
    await until('\r\n\r\n');
    expect(text).toBe('HTTP/1.1 200 Connection Established\r\n\r\n');
    await Bun.sleep(1500);
    sock.write('still here');
    await until('still here');
    expect(text).toEndWith('\r\n\r\nstill here');
    expect(sock.destroyed).toBe(false);
  });
});

describe.skipIf(!canRun)('network proxy: what a sandboxed client sees (real bwrap and relay)', () => {
  test('a tunnel whose server answers without a length and closes ends for the client', async () => {
    // HTTP/1.0 style: the body ends where the connection does.
    const server = net.createServer((s) => s.once('data', () => s.end('HTTP/1.0 200 OK\r\n\r\nuntil the end\n')));
    cleanups.push(() => server.close());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    const allow = [`127.0.0.1:${port}`];
    const exec = await allowlistExecutor(fx, allow, await start(allow));
    const result = await exec(`curl -sS --noproxy "" --max-time 5 -p http://127.0.0.1:${port}/; echo "status $?"`, { signal: new AbortController().signal });
    expect(result.output).toBe('until the end\nstatus 0\n');
  });

  test('one that stalls mid-head gets 408 and the end of its connection', async () => {
    const allow = ['example.test:443'];
    const p = await start(allow, { timeouts: SHORT });
    const exec = await allowlistExecutor(fx, allow, p);
    // bash for /dev/tcp; cat ends only at the connection's end; timeout (status 124) stops it if that never comes.
    const result = await exec(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128; printf "CONNECT example.test:443 HTTP/1.1\\r\\n" >&3; timeout 5 cat <&3; echo "status $?"'`, {
      signal: new AbortController().signal,
    });
    expect(result.output).toStartWith('HTTP/1.1 408 Request Timeout');
    expect(result.output).toEndWith('status 0\n');
  });
});
