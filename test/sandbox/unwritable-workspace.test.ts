// Reviewing code you may not write (a root-owned checkout, /usr/src, a read-only mount): shell
// commands work there, writes fail as the system says, and conch creates nothing in the workspace.
// As root, "may not write" is a read-only bind mount (or an immutable directory where mounting is
// not allowed); as an ordinary user, a directory root owns.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anthropicEnv, CONCH, runConch, useHarness } from '../support/cli.ts';
import { canRun, isRoot, snapshot } from './harness.ts';

const harness = useHarness();

interface Unwritable {
  dir: string;
  how: string;
  undo(): void;
}

/** A directory with a file in it that this user cannot write, or null with the reason. */
function unwritable(base: string): Unwritable | { reason: string } {
  const dir = join(base, 'checkout');
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'README'), 'read me\n');
  writeFileSync(join(dir, 'src', 'main.c'), 'int main(void) { return 0; }\n');
  if (!isRoot) {
    // An ordinary user cannot make a directory another user owns; a root-owned one exists everywhere.
    return { dir: realpathSync('/usr'), how: 'a directory owned by root', undo: () => {} };
  }
  const sh = (command: string) => Bun.spawnSync(['sh', '-c', command], { stderr: 'pipe' });
  if (sh(`mount --bind '${dir}' '${dir}' && mount -o remount,bind,ro '${dir}'`).exitCode === 0) {
    return { dir, how: 'a read-only bind mount', undo: () => void sh(`umount '${dir}'`) };
  }
  sh(`umount '${dir}' 2>/dev/null`);
  if (sh(`chattr +i '${dir}'`).exitCode === 0) return { dir, how: 'an immutable directory', undo: () => void sh(`chattr -i '${dir}'`) };
  return { reason: 'root here can neither mount read-only nor chattr +i' };
}

// Its own temp dir, not the harness's: the mount (or flag) must be undone before anything is removed.
let base: string;
let target: Unwritable | { reason: string };
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'conch-unwritable-')));
  target = unwritable(base);
});
afterEach(() => {
  if ('undo' in target) target.undo();
  rmSync(base, { recursive: true, force: true });
});

const NAMES = ['.conch', '.env.local', '.env.production', 'HEAD', '.git'];

function checked(): Unwritable {
  if (!('dir' in target)) throw new Error(`no unwritable directory for this test: ${target.reason}`);
  return target;
}

describe.skipIf(!canRun)('a workspace this user cannot write', () => {
  test('conch sandbox run: the command runs, a write fails as the OS says, nothing is created', async () => {
    const { dir, how } = checked();
    // /usr is far too big to walk; its top level is compared below.
    const before = dir === '/usr' ? null : snapshot(dir);
    const listed = readdirSync(dir).sort();
    const run = Bun.spawnSync([CONCH, 'sandbox', 'run', '--', 'sh', '-c', 'ls -a; touch new-file'], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: harness.dirs.home, CONCH_FROM_SOURCE: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const stdout = run.stdout.toString();
    const stderr = run.stderr.toString();
    expect({ how, code: run.exitCode }).toEqual({ how, code: 1 }); // touch's status, not conch's
    for (const name of listed) expect(stdout.split('\n')).toContain(name);
    expect(stderr).toMatch(/touch: cannot touch 'new-file': (Permission denied|Read-only file system|Operation not permitted)/);
    expect(stderr).not.toContain('conch:');
    expect(stderr).not.toMatch(/\bat .*\.ts:\d+/); // no stack trace
    for (const name of NAMES) expect({ name, exists: existsSync(join(dir, name)) }).toEqual({ name, exists: listed.includes(name) });
    if (before !== null) expect(snapshot(dir)).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(listed);
  });

  test('a run: bash commands work there and the run completes', async () => {
    const { dir, how } = checked();
    const listed = readdirSync(dir).sort();
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] }, { text: 'listed' }]);
    const r = await runConch({
      dirs: { ...harness.dirs, workspace: dir },
      args: ['--model', 'anthropic/test-model', '--json', 'list the files'],
      env: anthropicEnv(harness.server.anthropicBaseUrl),
    });
    expect({ how, code: r.code, stderr: r.stderr }).toEqual({ how, code: 0, stderr: '' });
    const result = JSON.stringify(harness.server.requests.at(-1)!.body);
    expect(result).not.toContain('EACCES');
    expect(result).toContain(listed.find((name) => !name.startsWith('.'))!);
    for (const name of NAMES) expect({ name, exists: existsSync(join(dir, name)) }).toEqual({ name, exists: listed.includes(name) });
  });

  test('a directory of your own without write permission: refused with the fix (root: it is writable, and used)', async () => {
    const dir = join(base, 'mine');
    mkdirSync(dir);
    chmodSync(dir, 0o555);
    try {
      const run = Bun.spawnSync([CONCH, 'sandbox', 'run', '--', 'sh', '-c', 'echo ran; echo X=1 > .env.local'], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: harness.dirs.home, CONCH_FROM_SOURCE: '1' },
        stdout: 'pipe',
        stderr: 'pipe',
      });
      if (isRoot) {
        // Root writes through the mode bits, so conch holds the names as anywhere else.
        expect(run.stdout.toString()).toBe('ran\n');
        expect(run.stderr.toString()).toContain('.env.local: Read-only file system');
      } else {
        // A command could chmod its own directory back to writable and create .env.local.
        expect(run.exitCode).toBe(2);
        expect(run.stderr.toString()).toContain(`chmod u+w ${dir}`);
        expect(run.stdout.toString()).toBe('');
      }
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      chmodSync(dir, 0o755);
    }
  });
});
