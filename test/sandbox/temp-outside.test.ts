// TMPDIR outside /tmp and outside the workspace (TMPDIR=/var/tmp/…, ~/tmp): conch keeps every run's
// directory (its commands' /tmp, its full-output logs) and the per-user state directory (placeholder
// records, the user lock) there. The sandbox's /tmp is private, but that TMPDIR was visible read-only
// to every command: one project's command read another project's run's /tmp and logs, and could
// flock(2) the user lock through a read-only descriptor, holding every other conch run up 5 s per
// command and then making it go on without the lock. Real CLI processes, real bwrap.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CONCH, conchEnv, makeDirs, type Sandbox } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { canRun } from './harness.ts';

const VAR_TMP = '/var/tmp';
let base: string;
let tmp: string;
let first: Sandbox;
let second: Sandbox;
let servers: ModelServer[];
beforeEach(async () => {
  base = realpathSync(mkdtempSync(join(VAR_TMP, 'conch-temp-outside-')));
  tmp = join(base, 'tmp');
  mkdirSync(tmp, { mode: 0o700 });
  first = await makeDirs();
  second = await makeDirs();
  servers = [await startModelServer(), await startModelServer()];
});
afterEach(async () => {
  for (const server of servers) await server.close();
  await first.cleanup();
  await second.cleanup();
  rmSync(base, { recursive: true, force: true });
});

function start(dirs: Sandbox, server: ModelServer) {
  const child = Bun.spawn([CONCH, '--json', '--ephemeral', 'go'], {
    cwd: dirs.workspace,
    env: conchEnv(dirs, { TMPDIR: tmp, CONCH_FROM_SOURCE: '1', ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: server.anthropicBaseUrl }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
}

describe.skipIf(!canRun || !existsSync(VAR_TMP))('TMPDIR outside /tmp and the workspace', () => {
  test("a command sees nothing of TMPDIR but its own run's: not another run's /tmp or logs, not the state directory or its lock", async () => {
    const [a, b] = servers as [ModelServer, ModelServer];
    const release = join(first.workspace, 'release');
    // The first run keeps a secret in its /tmp and a full-output log, and waits until the second is done.
    a.script([
      { toolCalls: [{ name: 'bash', arguments: { command: `echo TOPSECRET > /tmp/secret; seq 1 100000; for i in $(seq 300); do [ -e ${release} ] && break; sleep 0.1; done` } }] },
      { text: 'done' },
    ]);
    const running = start(first, a);
    const firstDir = () => readdirSync(tmp).find((name) => name.startsWith('conch-run-') && existsSync(join(tmp, name, 'tmp', 'secret')));
    for (let i = 0; i < 300 && !firstDir(); i++) await Bun.sleep(100);
    const other = firstDir();
    expect(other).toBeDefined();
    const look =
      `ls -A ${tmp} | sed 's/^/SAW /'; cat ${tmp}/conch-run-*/tmp/secret ${tmp}/conch-run-*/logs/* 2>/dev/null | head -n 3; ` +
      `for f in ${tmp}/conch-*/placeholders.lock; do [ -e "$f" ] && flock -n "$f" true && echo "LOCKED $f"; done; true`;
    b.script([{ toolCalls: [{ name: 'bash', arguments: { command: look } }] }, { text: 'done' }]);
    const [, , code] = await start(second, b);
    Bun.write(release, '');
    expect((await running)[2]).toBe(0);
    expect(code).toBe(0);
    const sent = JSON.stringify(b.requests[1]!.body.messages.at(-1));
    expect(sent).toContain('exit code 0');
    // Only the command's own run directory shows (its temp dir is mounted there too).
    expect(sent).toMatch(/SAW conch-run-/);
    expect(sent).not.toContain(other!);
    expect(sent).not.toMatch(/SAW conch-\d|TOPSECRET|LOCKED|\\n1\\n2\\n/);
    // Both runs' directories went with them.
    expect(readdirSync(tmp).filter((name) => name.startsWith('conch-run-'))).toEqual([]);
  });
});
