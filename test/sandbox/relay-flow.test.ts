// The allowlist channel holds a bounded amount for a command, whatever the command does (channel.ts):
// an upload to a host that stops reading used to pile up in conch's memory (600 MiB in 8 s here), and
// then 4 MiB per connection (36 MiB for 24 curl uploads, 2 GiB for the 512 a command may open),
// and so did a download while the command kept its relay from reading (SIGSTOP). A channel-wide
// stop bounded it, but then one stalled upload held up every other connection of the command, even
// their opens; uploads are now windowed per connection. Real bwrap, the perl relay, the proxy, and a
// TCP server on the host's loopback; nothing is lost once reading resumes.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { startProxy, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { WINDOW } from '../../src/sandbox/relay.ts';
import { allowlistExecutor, canRun, fixture, PYTHON, type Fixture } from './harness.ts';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;

let fx: Fixture;
let server: net.Server;
let port: number;
let proxy: NetworkProxy;
let toProxy: net.Socket[];
const sockets: net.Socket[] = [];
let onConnection: (socket: net.Socket) => void;

beforeEach(async () => {
  fx = fixture();
  server = net.createServer((socket) => {
    sockets.push(socket);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as net.AddressInfo).port;
  const started = await startProxy({ allow: parseAllowList([`127.0.0.1:${port}`], String), dir: mkdtempSync(join(fx.root, 'proxy-')), source: 'the test allowlist' });
  // The sockets the channel writes uploads into: what they hold is what conch holds.
  toProxy = [];
  proxy = { ...started, connect: () => {
    const socket = started.connect();
    toProxy.push(socket);
    return socket;
  } };
});
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await proxy.close();
  fx.cleanup();
});

async function exec(command: string) {
  const run = await allowlistExecutor(fx, [`127.0.0.1:${port}`], proxy);
  return run(command, { signal: new AbortController().signal });
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !check(); i++) await Bun.sleep(25);
  expect(check()).toBe(true);
}

const CURL = `curl -sS --noproxy "" -H 'Expect:'`;

describe.skipIf(!canRun)('the allowlist channel under a stalled peer', () => {
  test('an upload to a host that stops reading waits in the sandbox, not in conch; all of it arrives later', async () => {
    let received = 0;
    let reading: (() => void) | null = null;
    onConnection = (socket) => {
      socket.pause();
      reading = () => {
        socket.on('data', (chunk: Buffer) => {
          received += chunk.length;
          // Headers and body: done once the body's bytes are in.
          if (received >= SIZE) socket.end('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n');
        });
        socket.resume();
      };
    };
    const running = exec(`head -c ${SIZE} /dev/zero > /tmp/body && ${CURL} --data-binary @/tmp/body http://127.0.0.1:${port}/; echo " rc=$?"`);
    await until(() => reading !== null);
    // Let the stalled upload push for a while, noting the most the proxy's side of the channel held.
    let most = 0;
    for (let i = 0; i < 40; i++) {
      await Bun.sleep(50);
      for (const socket of toProxy) most = Math.max(most, socket.writableLength);
    }
    expect(most).toBeLessThan(16 * MiB);
    reading!();
    const result = await running;
    expect(result.output).toContain('ok\n rc=0');
    expect(received).toBeGreaterThanOrEqual(SIZE);
  }, 60_000);

  test('uploads on many connections to a host that stops reading: what conch holds is bounded for them all, not per connection', async () => {
    const stalled: net.Socket[] = [];
    onConnection = (socket) => {
      socket.pause();
      stalled.push(socket);
    };
    const count = 24;
    const running = exec(`head -c ${6 * MiB} /dev/zero > /tmp/body; for i in $(seq ${count}); do ${CURL} --data-binary @/tmp/body http://127.0.0.1:${port}/ >/dev/null 2>&1 & done; wait; echo done`);
    await until(() => stalled.length === count);
    let most = 0;
    for (let i = 0; i < 60; i++) {
      await Bun.sleep(50);
      most = Math.max(most, toProxy.reduce((sum, socket) => sum + socket.writableLength, 0));
    }
    for (const socket of stalled) socket.destroy();
    expect((await running).output).toContain('done');
    expect(most).toBeLessThanOrEqual(count * WINDOW);
  }, 60_000);

  test('a stalled upload holds up only its own connection: another one opens and gets its answer meanwhile', async () => {
    let first: net.Socket | null = null;
    onConnection = (socket) => {
      if (!first) {
        first = socket;
        socket.pause();
        return;
      }
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n'));
    };
    const running = exec(
      `head -c ${6 * MiB} /dev/zero > /tmp/body; ${CURL} --data-binary @/tmp/body http://127.0.0.1:${port}/ >/dev/null 2>&1 & ` +
        `while [ ! -e go ]; do sleep 0.05; done; ${CURL} --max-time 10 http://127.0.0.1:${port}/second; echo " rc=$?"; kill %1`,
    );
    await until(() => first !== null);
    // Long enough for the stalled upload to push all it may (the whole 6 MiB, before the window).
    await Bun.sleep(1000);
    const most = toProxy.reduce((sum, socket) => sum + socket.writableLength, 0);
    await Bun.write(join(fx.ws, 'go'), '');
    const result = await running;
    expect(result.output).toContain('ok\n rc=0');
    expect(most).toBeLessThanOrEqual(WINDOW);
  }, 60_000);

  test("a download while the command keeps its relay from reading waits on the host's server, not in conch", async () => {
    const size = 4 * SIZE;
    let written = 0;
    onConnection = (socket) => {
      socket.once('data', () => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n`);
        const chunk = Buffer.alloc(MiB);
        const more = () => {
          while (written < size) {
            written += chunk.length;
            if (!socket.write(chunk)) return void socket.once('drain', more);
          }
          socket.end();
        };
        more();
      });
    };
    const got = join(fx.tmp, 'got');
    const relay = `for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = perl ] && echo \${p#/proc/}; done`;
    const running = exec(
      `r=$(${relay}); ${CURL} -o /tmp/got http://127.0.0.1:${port}/ & c=$!; ` +
        'while [ "$(stat -c %s /tmp/got 2>/dev/null || echo 0)" -lt 1048576 ]; do sleep 0.01; done; ' +
        'kill -STOP $r; : > stopped; while [ ! -e resumed ]; do sleep 0.05; done; kill -CONT $r; wait $c; echo "rc=$? $(wc -c < /tmp/got)"',
    );
    await until(() => existsSync(join(fx.ws, 'stopped')));
    await Bun.sleep(1000);
    // Sent by the server and not yet in the sandbox: the channel's queue, socket buffers, the relay's.
    const inFlight = written - Bun.file(got).size;
    expect(inFlight).toBeLessThan(32 * MiB);
    await Bun.write(join(fx.ws, 'resumed'), '');
    const result = await running;
    expect(result.output).toContain(`rc=0 ${size}`);
  }, 60_000);
});

// The channel is the command's to write too: it can take the relay's descriptor (pidfd_getfd; or
// the relay's memory, same user) and send conch frames the relay never would.
const STEAL = (body: string) => `${PYTHON} -c '
import ctypes, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(438, libc.syscall(434, int(sys.argv[1]), 0), 4, 0)
if fd < 0: sys.exit("no channel: %d" % ctypes.get_errno())
ch = socket.socket(fileno=fd)
${body}' $PPID`;

describe.skipIf(!canRun || !PYTHON)('a channel the command writes itself', () => {
  test('a frame claiming 4 GiB ends the channel instead of being buffered', async () => {
    const result = await exec(STEAL(`
ch.sendall(struct.pack(">BII", 2, 1, 0xFFFFFFF0))
try:
    for i in range(256):
        ch.sendall(bytes(65536))
    print("conch took 16 MiB of one frame")
except OSError:
    print("channel closed")
`));
    expect(result.output).toContain('channel closed');
  }, 60_000);

  test("upload frames past a connection's window end the channel instead of being buffered", async () => {
    // A tunnel to a host that stops reading, so that the proxy keeps the connection (it closes one
    // whose head is no request) and what conch is sent past the window has nowhere to go.
    onConnection = (socket) => socket.pause();
    const result = await exec(STEAL(`
ch.sendall(struct.pack(">BII", 1, 1, 0))
head = b"CONNECT 127.0.0.1:${port} HTTP/1.1\\r\\n\\r\\n"
ch.sendall(struct.pack(">BII", 2, 1, len(head)) + head)
try:
    for i in range(256):
        ch.sendall(struct.pack(">BII", 2, 1, 65536) + bytes(65536))
    print("conch took 16 MiB of one connection")
except OSError:
    print("channel closed")
`));
    expect(result.output).toContain('channel closed');
  }, 60_000);

  test('connections past the limit are closed at once, not opened to the proxy', async () => {
    const result = await exec(STEAL(`
for i in range(1, 601):
    ch.sendall(struct.pack(">BII", 1, i, 0))
ch.settimeout(5)
closed, buf = set(), b""
try:
    while len(closed) < 88:
        buf += ch.recv(65536)
        while len(buf) >= 9:
            t, i, n = struct.unpack(">BII", buf[:9])
            buf = buf[9 + n:]
            if t == 3: closed.add(i)
except socket.timeout:
    pass
print("closed", len(closed), min(closed) if closed else 0)
`));
    // Each one conch opens is a connection to the proxy (two descriptors in conch).
    expect(toProxy.length).toBe(512);
    expect(result.output).toMatch(/closed (8[89]|9\d|\d{3}) /);
  }, 60_000);

  test('an upload frame of no bytes (the relay never sends one; conch would answer each with a CREDIT) ends the channel', async () => {
    const result = await exec(STEAL(`
ch.sendall(struct.pack(">BII", 1, 1, 0))
try:
    for i in range(256):
        ch.sendall(struct.pack(">BII", 2, 1, 0) * 7281)
    print("conch took 16 MiB of empty frames")
except OSError:
    print("channel closed")
`));
    expect(result.output).toContain('channel closed');
  }, 60_000);
});

// Every frame conch reads may make a reply (an OPEN past the limit a CLOSE, an upload's DATA a
// CREDIT). A command that writes frames and reads none of the replies (the relay reads the channel
// only once the command first connects to it) had conch queue them all, its memory growing with
// what the command sent: conch now reads no more frames until its replies drain. `frames` is Python
// making `flood`, what the command sends (about 32 MiB); it prints how much of it conch took before
// it stopped reading, and how much more once the command read the replies.
const FLOOD = (frames: string) => STEAL(`
${frames}
flood = memoryview(flood)
sent = 0
def push(limit):
    global sent
    try:
        while sent < limit:
            sent += ch.send(flood[sent:min(limit, sent + (1 << 20))])
    except socket.timeout:
        pass
ch.settimeout(5)
push(len(flood))
took = sent
ch.settimeout(2)
try:
    while ch.recv(1 << 20):
        pass
except socket.timeout:
    pass
ch.settimeout(5)
push(min(len(flood), took + (1 << 20)))
print("took %d MiB of %d, then %d KiB more" % (took >> 20, len(flood) >> 20, (sent - took) >> 10))
`);

/** What conch took of the flood before it stopped (MiB), and after the command read its replies (KiB). */
function taken(output: string): { before: number; after: number } {
  expect(output).toMatch(/^took \d+ MiB of \d+, then \d+ KiB more\n$/);
  const [, before, after] = /took (\d+) MiB of \d+, then (\d+) KiB more/.exec(output)!;
  return { before: Number(before), after: Number(after) };
}

describe.skipIf(!canRun || !PYTHON)('a channel whose replies the command never reads', () => {
  test('OPENs past the connection limit: conch stops taking them while their CLOSE replies wait', async () => {
    const result = await exec(FLOOD('flood = b"".join(struct.pack(">BII", 1, i, 0) for i in range(1, 513)) + struct.pack(">BII", 1, 100000, 0) * ((32 << 20) // 9)'));
    expect(taken(result.output)).toEqual({ before: expect.any(Number), after: 1024 });
    expect(taken(result.output).before).toBeLessThan(16);
    expect(result.exitCode).toBe(0);
  }, 60_000);

  test("one-byte uploads within each connection's window: conch holds what they carry, not a write for each", async () => {
    let received = 0;
    onConnection = (socket) => socket.on('data', (chunk: Buffer) => (received += chunk.length));
    const count = 48;
    const before = process.memoryUsage().rss;
    let most = before;
    const sampler = setInterval(() => (most = Math.max(most, process.memoryUsage().rss)), 20);
    const result = await exec(FLOOD(`
head = b"CONNECT 127.0.0.1:${port} HTTP/1.1\\r\\n\\r\\n"
flood = b"".join(struct.pack(">BII", 1, i, 0) + struct.pack(">BII", 2, i, len(head)) + head + struct.pack(">BIIc", 2, i, 1, b"x") * 65000 for i in range(1, ${count + 1}))`));
    clearInterval(sampler);
    taken(result.output);
    expect(result.exitCode).toBe(0);
    expect(received).toBe(count * 65000);
    // 48 windows are 3 MiB; a write for each byte was 1.3 to 1.8 GiB.
    expect(most - before).toBeLessThan(256 * MiB);
  }, 60_000);
});
