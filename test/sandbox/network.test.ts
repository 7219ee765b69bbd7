// The network allowlist, for real: bwrap with its own network namespace, the perl relay inside, the
// proxy on the host, and upstream HTTP servers on 127.0.0.1 (allowing a loopback address literally
// is how these tests allow it). Every connection stays on this machine's loopback.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { lookup as dnsLookup } from 'node:dns/promises';
import dgram from 'node:dgram';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { startProxy, type Lookup, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { createExecutor } from '../../src/shell/exec.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { allowlistExecutor, canRun, fixture, type Fixture } from './harness.ts';
import { makeDirs, runConch, writeConfig } from '../support/cli.ts';

const hits = { a: 0, b: 0 };
let a: ReturnType<typeof Bun.serve>;
let b: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  a = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (hits.a++, new Response('from A\n')) });
  b = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (hits.b++, new Response('from B\n')) });
});
afterAll(() => {
  a.stop(true);
  b.stop(true);
});

let fx: Fixture;
let proxyDir: string;
let proxy: NetworkProxy | null = null;
const looked: string[] = [];
const recordingLookup: Lookup = async (host) => {
  looked.push(host);
  return (await dnsLookup(host, { all: true })).map((x) => x.address);
};
beforeEach(() => {
  fx = fixture();
  proxyDir = mkdtempSync(join(fx.root, 'proxy-'));
  looked.length = 0;
  hits.a = hits.b = 0;
});
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  fx.cleanup();
});

/** Whether `pid` is a descendant of this test process (parents as the host sees them). */
function descendsFromUs(pid: number): boolean {
  for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
    const stat = readFileSync(`/proc/${p}/stat`, 'latin1');
    p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (p === process.pid) return true;
  }
  return false;
}

async function executor(allow: string[], lookup: Lookup = recordingLookup) {
  proxy = await startProxy({ allow: parseAllowList(allow, String), dir: proxyDir, lookup, source: 'the test allowlist' });
  const exec = await allowlistExecutor(fx, allow, proxy);
  return (command: string) => exec(command.replaceAll('{A}', String(a.port)).replaceAll('{B}', String(b.port)), { signal: new AbortController().signal });
}

// Through the proxy explicitly: NO_PROXY names the sandbox's own loopback, which 127.0.0.1 is inside.
const CURL = 'curl -sS --noproxy ""';

describe.skipIf(!canRun)('network allowlist (real bwrap, relay and proxy)', () => {
  test('an allowed address is reached over plain HTTP and CONNECT; the proxy variables are set', async () => {
    const run = await executor([`127.0.0.1:${a.port}`]);
    const result = await run(`echo "$HTTP_PROXY $HTTPS_PROXY $ALL_PROXY $http_proxy $https_proxy $all_proxy"; ${CURL} http://127.0.0.1:{A}/; ${CURL} -p http://127.0.0.1:{A}/`);
    expect(result.output).toBe(`${'http://127.0.0.1:3128 '.repeat(5)}http://127.0.0.1:3128\nfrom A\nfrom A\n`);
    expect(hits.a).toBe(2);
    expect(result.notes).toBeUndefined();
  });

  test('a host not on the list gets 403, and the tool result names the rule', async () => {
    const run = await executor([`127.0.0.1:${a.port}`]);
    const result = await run(`${CURL} -i http://127.0.0.1:{B}/; ${CURL} -p http://127.0.0.1:{B}/; echo "[$?]"`);
    expect(result.output).toContain('HTTP/1.1 403 Forbidden');
    expect(result.output).toContain('X-Conch-Rule: sandbox.network.allow');
    expect(result.output).toContain('[56]'); // curl: CONNECT tunnel failed
    expect(hits.b).toBe(0);
    expect(result.notes?.[0]).toContain(`network: 127.0.0.1:${b.port} denied by the network allowlist (the test allowlist)`);
  });

  test('a denied name is never resolved', async () => {
    const run = await executor([`127.0.0.1:${a.port}`]);
    const result = await run(`${CURL} -p https://not-allowed.example.invalid/ ; ${CURL} http://other.example.invalid/; echo "[$?]"`);
    expect(result.notes?.length).toBe(2);
    expect(looked).toEqual([]);
  });

  test('no way around the proxy: direct TCP (curl --noproxy, perl), UDP and DNS to a resolver all fail', async () => {
    const udp = dgram.createSocket('udp4');
    const got: Buffer[] = [];
    udp.on('message', (m) => got.push(m));
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', () => resolve()));
    const port = udp.address().port;
    try {
      const run = await executor([`127.0.0.1:${a.port}`]);
      const perl = (code: string) => `perl -MSocket -e '${code}'`;
      const result = await run(
        [
          `curl -sS --noproxy "*" http://127.0.0.1:{A}/ 2>/dev/null || echo DIRECT-REFUSED`,
          perl(`socket(my $s, PF_INET, SOCK_STREAM, 0); connect($s, sockaddr_in($ARGV[0], inet_aton("127.0.0.1"))) ? print "TCP-OPEN\\n" : print "TCP-REFUSED\\n"`) + ' {A}',
          // A datagram and a DNS query (for example.org) to the host's resolver port on 127.0.0.1.
          perl(`socket(my $s, PF_INET, SOCK_DGRAM, 0); my $q = pack("nnnnnn", 1, 256, 1, 0, 0, 0) . "\\x07example\\x03org\\x00" . pack("nn", 1, 1); for (1..3) { send($s, "hello", 0, sockaddr_in($ARGV[0], inet_aton("127.0.0.1"))); send($s, $q, 0, sockaddr_in($ARGV[0], inet_aton("127.0.0.1"))) } print "UDP-SENT\\n"`) + ` ${port}`,
        ].join('; '),
      );
      expect(result.output).toBe('DIRECT-REFUSED\nTCP-REFUSED\nUDP-SENT\n');
      await Bun.sleep(200); // let any datagram that did get out arrive
      expect(got).toEqual([]);
      expect(hits.a).toBe(0);
    } finally {
      udp.close();
    }
  });

  test('DNS rebinding: an allowed name resolving to loopback or metadata is refused; the literal address is the way to allow it', async () => {
    const run = await executor([`localhost:${a.port}`]);
    const result = await run(`${CURL} http://localhost:{A}/; ${CURL} -p http://localhost:{A}/; echo "[$?]"`);
    expect(hits.a).toBe(0);
    expect(result.output).toContain('resolves to 127.0.0.1, a loopback address');
    expect(result.notes?.[0]).toContain(`--allow-net 127.0.0.1:${a.port}`);
    await proxy!.close();
    const rebound = await executor([`registry.example.test:${a.port}`], async () => ['169.254.169.254']);
    const meta = await rebound(`${CURL} http://registry.example.test:{A}/latest/meta-data/`);
    expect(meta.output).toContain('169.254.169.254, a link-local address');
    expect(hits.a).toBe(0);
  });

  test("a command's thousands of refused connections are a bounded note in its result, and conch keeps few of them", async () => {
    // Each to another port, so that no two refusals read alike.
    const flood = String.raw`perl -e 'use IO::Socket::INET; for my $p (1..3000) { my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:3128") or next; print $s "CONNECT denied.example.test:$p HTTP/1.1\r\n\r\n"; my $l = <$s>; } print "done\n"'`;
    const result = await (await executor(['allowed.example.test']))(flood);
    expect(result.output).toContain('done');
    const notes = result.notes ?? [];
    expect(notes.join('\n').length).toBeLessThan(16 * 1024);
    expect(notes.at(-1)).toMatch(/ and \d+ more connections? refused/);
    expect(notes.length).toBe(21);
    expect(proxy!.refusals()).toBe(3000);
    expect(notes.at(-1)).toContain(' and 2980 more connections refused');
  });

  test('a host Unix socket cannot be reached from inside', async () => {
    const path = join(fx.outside, 'host.sock');
    let connections = 0;
    const server = net.createServer((s) => (connections++, s.end('HOST SECRET\n')));
    await new Promise<void>((resolve) => server.listen(path, () => resolve()));
    try {
      const run = await executor([`127.0.0.1:${a.port}`]);
      const result = await run(
        `perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or do { print "SOCKET-REFUSED\\n"; exit }; connect($s, pack_sockaddr_un($ARGV[0])) ? print <$s> : print "CONNECT-REFUSED\\n"' ${path}; ${CURL} --unix-socket ${path} http://x/ 2>/dev/null || echo CURL-REFUSED`,
      );
      expect(result.output).toBe('SOCKET-REFUSED\nCURL-REFUSED\n');
      expect(connections).toBe(0);
    } finally {
      server.close();
      rmSync(path, { force: true });
    }
  });

  test('the relay dies with the command, and the proxy with the run', async () => {
    const run = await executor([`127.0.0.1:${a.port}`]);
    expect((await run(`${CURL} http://127.0.0.1:{A}/`)).output).toBe('from A\n');
    // Only this test's: other conch runs on the machine (other test files, other users) have relays of their own.
    const relays = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && (() => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('conch relay: no channel') && descendsFromUs(Number(p));
      } catch {
        return false;
      }
    })());
    expect(relays).toEqual([]);
    const socket = proxy!.socketPath;
    expect(existsSync(socket)).toBe(true);
    await proxy!.close();
    proxy = null;
    expect(existsSync(socket)).toBe(false);
    const refused = await new Promise<boolean>((resolve) => net.connect(socket).on('error', () => resolve(true)).on('connect', () => resolve(false)));
    expect(refused).toBe(true);
  });

  test('no descriptor is left open per command (the channel is closed once the relay is gone)', async () => {
    const run = await executor([`127.0.0.1:${a.port}`]);
    // Whatever a first command opens for the whole process is open from here on.
    await run('true');
    // Each descriptor by number and what it is (a socket's inode is its own): one closed by then
    // (an earlier test's connection going down) cannot hide a new one that reuses its number.
    // Not conch's own /proc files: the orphan sweep keeps one open from the first time a command
    // needs it, which may be any of these (how fast a sandbox goes down decides).
    const open = () =>
      readdirSync('/proc/self/fd').flatMap((fd) => {
        try {
          const what = readlinkSync(`/proc/self/fd/${fd}`);
          return what.startsWith('/proc/') ? [] : [`${fd} ${what}`];
        } catch {
          return []; // closed meanwhile (readdir's own)
        }
      });
    const before = new Set(open());
    for (let i = 0; i < 5; i++) await run('true');
    // A command's channel closes when its reader sees the relay's end, which can come a moment
    // after the command returns: wait for the descriptors opened since, not for a count to settle.
    const opened = () => open().filter((fd) => !before.has(fd));
    for (let i = 0; i < 500 && opened().length > 0; i++) await Bun.sleep(10);
    expect(opened()).toEqual([]);
  });

  test('an allowlist without its proxy gets no network at all (fails closed)', async () => {
    const exec = createExecutor({
      workspace: await Workspace.open({ root: fx.ws, unrestricted: false }),
      unrestricted: false,
      sandbox: { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], netAllow: [`127.0.0.1:${b.port}`] },
      limits: DEFAULT_LIMITS,
      env: {},
      shellEnabled: true,
      tmpDir: fx.tmp,
      logDir: join(fx.root, 'logs'),
    });
    const result = await exec(`curl -sS --noproxy "*" http://127.0.0.1:${b.port}/ 2>/dev/null || echo NO-NETWORK`, { signal: new AbortController().signal });
    expect(result.output).toBe('NO-NETWORK\n');
    expect(hits.b).toBe(0);
  });
});

describe('network settings in config and flags', () => {
  const load = (flags: Record<string, unknown>, user?: unknown, project?: unknown) => {
    const home = join(fx.root, 'home');
    const xdg = join(home, '.config');
    const put = (file: string, value: unknown) => {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(value));
    };
    if (user) put(join(xdg, 'conch', 'config.json'), user);
    if (project) put(join(fx.ws, '.conch', 'config.json'), project);
    return loadConfig({ cwd: fx.ws, env: { HOME: home, XDG_CONFIG_HOME: xdg }, flags });
  };

  test('--allow-net and sandbox.network.allow: the user grants (union), a project narrows, "off" wins', async () => {
    expect((await load({ allowNet: ['a.example.org'] })).sandbox.netAllow).toEqual(['a.example.org']);
    const both = await load({ allowNet: ['b.example.org'] }, { sandbox: { network: { allow: ['a.example.org', '@npm'] } } });
    expect(both.sandbox.netAllow).toEqual(['a.example.org', '@npm', 'b.example.org']);
    const narrowed = await load({}, { sandbox: { network: { allow: ['a.example.org', 'c.example.org'] } } }, { sandbox: { network: { allow: ['c.example.org', 'd.example.org'] } } });
    expect(narrowed.sandbox.netAllow).toEqual(['c.example.org']);
    const off = await load({ allowNet: ['a.example.org'] }, undefined, { sandbox: { network: 'off' } });
    expect(off.sandbox.network).toBe(false);
  });

  test.skipIf(!canRun)('conch sandbox run: a denial note quoting what a command sent reaches the terminal without its control sequences', async () => {
    const dirs = await makeDirs();
    try {
      await writeConfig(dirs, { sandbox: { network: { allow: ['127.0.0.1'] } } });
      // A CONNECT target with a window-title sequence in it, written to the proxy by hand.
      const send = 'my ($h,$p) = $ENV{http_proxy} =~ m{//([^:/]+):(\\d+)}; my $s = IO::Socket::INET->new(PeerAddr => $h, PeerPort => $p) or die; print $s "CONNECT \\e]0;owned\\a.example:443 HTTP/1.1\\r\\n\\r\\n"; print scalar <$s>;';
      const r = await runConch({ dirs, args: ['sandbox', 'run', '--', 'perl', '-MIO::Socket::INET', '-e', send], env: {} });
      expect(r.stdout).toContain('403');
      expect(r.stderr).toContain('owned.example:443 denied by the network allowlist');
      expect(r.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    } finally {
      await dirs.cleanup();
    }
  });

  test('a bad entry or an unknown preset is an error naming the key or flag', async () => {
    const bad = await load({ allowNet: ['http://x.org/'] }).then(() => null, (e: unknown) => e);
    expect(bad).toBeInstanceOf(ConfigError);
    expect((bad as Error).message).toContain('--allow-net "http://x.org/": expected HOST[:PORT]');
    const preset = await load({}, { sandbox: { network: { allow: ['@nope'] } } }).then(() => null, (e: unknown) => e);
    expect((preset as Error).message).toContain('"sandbox.network.allow[0]" "@nope" is no preset; available: @npm');
  });
});
