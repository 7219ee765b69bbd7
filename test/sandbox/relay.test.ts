// The allowlist relay's process tree, for real (bwrap, the perl relay, the proxy on the host): the
// relay is never a child of the command (a command that waits for all its children would wait for
// it forever, or reap a stray one), whether it was made by clone(CLONE_PARENT) or, where that
// syscall is unknown, by the double fork; both relay connections.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { prepareSandboxed } from '../../src/sandbox/index.ts';
import { startProxy, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { relayArgv } from '../../src/sandbox/relay.ts';
import { cleanEnv } from '../../src/process/spawn.ts';
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

/** Run `command` under the allowlist; `clone` overrides the relay's clone syscall number (0: unknown). */
async function run(command: string, clone?: number): Promise<{ code: number; stdout: string; stderr: string }> {
  const prepared = await prepareSandboxed({
    profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], netAllow: [`127.0.0.1:${upstream.port}`], proxy,
    command, cwd: fx.ws, workspace: fx.ws, tmpDir: fx.tmp,
  });
  try {
    let argv = prepared.argv;
    if (clone !== undefined) {
      // bwrap's own arguments end at its '--'; the relay and the command follow.
      const at = argv.indexOf('--') + 1;
      argv = [...argv.slice(0, at), ...relayArgv(argv[at]!, ['/bin/sh', '-c', command], clone)];
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

async function expectTree(clone?: number): Promise<void> {
  expect(await run(WAIT_ALL, clone)).toEqual({ code: 0, stdout: '-1\n', stderr: '' });
  const result = await run(`${RELAY_PARENT}; ${FETCH()}`, clone);
  expect(result.stdout.split('\n').map((l) => l.replace(/\s+/g, ' '))).toEqual(['PPid: 1', 'upstream', '']);
  expect(result.code).toBe(0);
}

describe.skipIf(!canRun)('the allowlist relay (real bwrap, relay and proxy)', () => {
  test('made by clone: a child of the sandbox pid 1, not of the command, and it relays', async () => {
    await expectTree();
  });

  test('where the clone syscall is unknown, the double fork gives the same tree', async () => {
    await expectTree(0);
  });

  test('a clone the kernel refuses (a number that is no syscall) falls back to the double fork', async () => {
    await expectTree(100000);
  });

  test("the command's exit status is its own", async () => {
    expect((await run('exit 7')).code).toBe(7);
    expect((await run('exit 7', 0)).code).toBe(7);
  });
});
