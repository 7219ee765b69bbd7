// conch's own directories in TMPDIR (the per-user state directory: the seccomp program, placeholder
// records, the lock; a run's directory: logs, the proxy's socket) are out of a command's reach even
// when the workspace contains TMPDIR (conch started in /tmp, TMPDIR inside the project), where the
// workspace's writable mount used to make them writable: a command could rewrite the seccomp
// program the next command is handed, or plant a link where conch writes a full-output log.
// Real CLI processes, real bwrap, the host checked afterwards.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { rememberLogDir } from '../../src/process/output.ts';
import { join } from 'node:path';
import { CONCH, conchEnv, makeDirs, type Sandbox } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { bashExecutor, canRun, fixture, snapshot } from './harness.ts';

const uid = process.getuid?.() ?? 0;
let dirs: Sandbox;
let tmp: string;
let server: ModelServer;
beforeEach(async () => {
  dirs = await makeDirs();
  tmp = join(dirs.workspace, 'tmp');
  mkdirSync(tmp);
  server = await startModelServer();
});
afterEach(async () => {
  await server.close();
  await dirs.cleanup();
});

async function conch(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([CONCH, ...args], {
    cwd: dirs.workspace,
    env: conchEnv(dirs, { TMPDIR: tmp, CONCH_FROM_SOURCE: '1', ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: server.anthropicBaseUrl }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

/** Try to change everything in `dir` (as the command sees it) and list what it saw, but the run's temp dir. */
const tamper = (dir: string) =>
  `for f in ${dir}/* ${dir}/*/*; do [ -e "$f" ] || continue; case "$f" in */tmp|*/tmp/*) continue;; esac; echo "SAW $f"; ` +
  `[ -f "$f" ] && (printf x >> "$f") 2>/dev/null && echo "CHANGED $f"; done; ` +
  `(ln -s /etc ${dir}/logs) 2>/dev/null && echo "LINKED ${dir}/logs"; ` +
  `(: > ${dir}/placeholders/1-1-1.json) 2>/dev/null && echo "WROTE a record"; true`;

describe.skipIf(!canRun)("conch's own directories inside the workspace", () => {
  test('conch sandbox run: the per-user state directory is hidden and unchanged', async () => {
    // A first run makes the state directory (the seccomp program, the lock) before the attack.
    expect((await conch(['sandbox', 'run', '--', 'true'])).code).toBe(0);
    const state = join(tmp, `conch-${uid}`);
    const before = snapshot(state);
    const result = await conch(['sandbox', 'run', '--', 'sh', '-c', tamper(state)]);
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(snapshot(state)).toBe(before);
  });

  test("a run: its own directory (where logs go) and the state directory are hidden from its commands", async () => {
    const state = join(tmp, `conch-${uid}`);
    const command = `for d in ${tmp}/conch-run-*; do ${tamper('"$d"')}; done; ${tamper(state)}`;
    server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'done' }]);
    const result = await conch(['--json', '--ephemeral', 'go']);
    expect(result.code).toBe(0);
    const sent = JSON.stringify(server.requests[1]!.body.messages.at(-1));
    expect(sent).not.toMatch(/SAW|CHANGED|LINKED|WROTE/);
    expect(sent).toContain('exit code 0');
    // The run's directory went with the run; nothing the command made is left in TMPDIR.
    expect(readdirSync(tmp).sort()).toEqual([`conch-${uid}`]);
  });

  test("a run's temp dir cannot be moved away and replaced by a link to the home directory", async () => {
    // Moving TMPDIR's folder away and leaving a link where the run's temp dir was made the next
    // command's /tmp the user's home: `echo … > /tmp/.bashrc` wrote ~/.bashrc.
    const moveAway =
      `cd ${tmp} && R=$(ls -d conch-run-* | head -n 1) && mv ${tmp} ${dirs.workspace}/moved && ` +
      `mkdir -p ${tmp}/$R && ln -s ${dirs.home} ${tmp}/$R/tmp && echo MOVED`;
    server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: moveAway } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo PWNED > /tmp/.bashrc; echo wrote' } }] },
      { text: 'done' },
    ]);
    const result = await conch(['--json', '--ephemeral', 'go']);
    expect(result.code).toBe(0);
    expect(JSON.stringify(server.requests[1]!.body.messages.at(-1))).not.toContain('MOVED');
    expect(existsSync(join(dirs.home, '.bashrc'))).toBe(false);
    expect(existsSync(join(dirs.workspace, 'moved'))).toBe(false);
  });

  test("a run's log folder replaced by a link (another conch's command can reach it) gets no log written through it", async () => {
    // With TMPDIR in a shared workspace, one run's folder is in reach of the other's commands: a link
    // at its logs/ had the next long output written into any folder (a ~/.bashrc.d the shell sources).
    const fx = fixture();
    try {
      const logs = join(fx.root, 'logs');
      rememberLogDir(logs);
      const target = join(fx.outside, 'bashrc.d');
      mkdirSync(target);
      rmSync(logs, { recursive: true });
      symlinkSync(target, logs);
      const result = await (await bashExecutor(fx))('yes "touch /tmp/PWNED #" | head -c 200000');
      expect(readdirSync(target)).toEqual([]);
      expect(result.output).toContain('could not create the output log');
    } finally {
      fx.cleanup();
    }
  });
});
