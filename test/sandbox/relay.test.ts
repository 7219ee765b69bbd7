// The allowlist relay's process tree, for real (bwrap, the perl relay, the proxy on the host): the
// relay is never a child of the command (a command that waits for all its children would wait for
// it forever, or reap a stray one); it is bwrap's main process, the command's parent, holds none of
// the command's descriptors, ends with the command and exits with its status.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { prepareSandboxed } from '../../src/sandbox/index.ts';
import { startProxy, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { cleanEnv } from '../../src/process/spawn.ts';
import { relayArgv } from '../../src/sandbox/relay.ts';
import { canRun, fixture, type Fixture } from './harness.ts';

let upstream: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  upstream = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('upstream\n') });
});
afterAll(() => upstream.stop(true));

let fx: Fixture;
let proxy: NetworkProxy;
beforeEach(async () => {
  fx = fixture();
  proxy = await startProxy({ allow: parseAllowList([`127.0.0.1:${upstream.port}`], String), dir: mkdtempSync(join(fx.root, 'proxy-')), source: 'the test allowlist' });
});
afterEach(async () => {
  await proxy.close();
  fx.cleanup();
});

/** Run `command` under the allowlist; `pidfdOpen` overrides the relay's pidfd_open syscall number (0: none). */
async function run(command: string, pidfdOpen?: number): Promise<{ code: number; stdout: string; stderr: string }> {
  const prepared = await prepareSandboxed({
    profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], netAllow: [`127.0.0.1:${upstream.port}`], proxy,
    command, cwd: fx.ws, workspace: fx.ws, tmpDir: fx.tmp,
  });
  try {
    let argv = prepared.argv;
    if (pidfdOpen !== undefined) {
      // The relay starts at perl's '-e' (bwrap's arguments and the directory check come before it).
      const at = argv.indexOf('-e') - 1;
      argv = [...argv.slice(0, at), ...relayArgv(argv[at]!, ['/bin/sh', '-c', command], pidfdOpen)];
    }
    const child = Bun.spawn(argv, {
      cwd: fx.ws,
      env: cleanEnv(process.env, {}, { tmpDir: fx.tmp }),
      stdio: ['ignore', 'pipe', 'pipe', ...prepared.extraFds, 'pipe'],
    });
    prepared.channel!((child.stdio as unknown[])[3 + prepared.extraFds.length] as number);
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    return { code, stdout, stderr };
  } finally {
    await prepared.release();
  }
}

// The command itself (exec: pid 2, bwrap's main process) waits for any child: wait() returns -1 at
// once when it has none. The relay as its child would block it for good; a helper left for it to
// reap would return that helper's pid.
const WAIT_ALL = `exec perl -e 'print wait(), "\\n"'`;
// The relay is the one perl there is.
const RELAY_PARENT = `for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = perl ] && grep '^PPid:' $p/status; done`;
// Through the proxy explicitly: NO_PROXY names the sandbox's own loopback, which 127.0.0.1 is inside.
const FETCH = () => `curl -sS --noproxy "" http://127.0.0.1:${upstream.port}/`;

describe.skipIf(!canRun)('the allowlist relay (real bwrap, relay and proxy)', () => {
  test("bwrap's main process and the command's parent, not its child, and it relays", async () => {
    expect(await run(WAIT_ALL)).toEqual({ code: 0, stdout: '-1\n', stderr: '' });
    const result = await run(`${RELAY_PARENT}; [ "$(cat /proc/$PPID/comm)" = perl ] && echo parent; ${FETCH()}`);
    expect(result.stdout.split('\n').map((l) => l.replace(/\s+/g, ' '))).toEqual(['PPid: 1', 'parent', 'upstream', '']);
    expect(result.code).toBe(0);
  });

  test("the command's exit status is its own, and a signal's is 128 + its number, as bwrap reports it", async () => {
    expect((await run('exit 7')).code).toBe(7);
    expect((await run('kill -TERM $$')).code).toBe(143);
    expect((await run('exec /no/such/command')).code).toBe(127);
  });

  test('without pidfd_open (a kernel before 5.3, or a number that is no syscall) the relay still ends with the command', async () => {
    for (const pidfdOpen of [0, 100000]) {
      expect((await run('exit 7', pidfdOpen)).code).toBe(7);
      expect((await run(`${FETCH()}; sleep 0.2; exit 3`, pidfdOpen))).toEqual({ code: 3, stdout: 'upstream\n', stderr: '' });
    }
  });

  test("the relay holds none of the command's descriptors (conch reads its output to the end)", async () => {
    // The relay lets go of them just after it starts the command: wait for that, then list what it holds.
    const list = 'for f in /proc/$PPID/fd/*; do readlink $f; done | sed "s/:\\[.*//" | sort | tr "\\n" " "';
    const result = await run(`for i in $(seq 200); do case "$(${list})" in *pipe*) sleep 0.01;; *) break;; esac; done; ${list}`);
    expect(result).toEqual({ code: 0, stdout: '/dev/null /dev/null /dev/null anon_inode socket socket ', stderr: '' });
  });
});
