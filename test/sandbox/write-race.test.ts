// write/edit against a concurrent sandboxed command that keeps swapping a workspace directory for a
// symlink (jobs plugin background commands, concurrent ACP sessions and un-awaited plugin execs all
// run commands while a tool call is in flight). The path was checked once; every later step must
// act on the directory that was checked, never on whatever the path points to at that moment.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { prepareSandboxed } from '../../src/sandbox/index.ts';
import { cleanEnv } from '../../src/process/spawn.ts';
import { PolicyError } from '../../src/core/errors.ts';
import { commit } from '../../src/files/commit.ts';
import { TEMP_MARKER } from '../../src/workspace/atomic.ts';
import { canPin, PinnedDir } from '../../src/workspace/pinned-dir.ts';
import { fileTools, sha } from '../support/file-tools.ts';
import { canRun, fixture, type Fixture } from './harness.ts';

const pinning = canPin();
if (!pinning) console.warn(`\n*** /proc/self/fd is not usable here (${process.platform}): the pinned-directory tests are SKIPPED ***\n`);

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

/** Runs `command` in the sandbox, in the background, until `work` is done. */
async function whileRunning(command: string, work: () => Promise<void>): Promise<void> {
  const prepared = await prepareSandboxed({
    profile: 'workspace-write', network: false, writableRoots: [], protectedGlobs: [], cwd: fx.ws, workspace: fx.ws, tmpDir: fx.tmp, command,
  });
  const child = Bun.spawn(prepared.argv, { cwd: fx.ws, env: cleanEnv(process.env, {}, { tmpDir: fx.tmp }), stdio: ['ignore', 'ignore', 'ignore', ...prepared.extraFds] });
  try {
    await Bun.sleep(50); // let the loop start swapping
    await work();
  } finally {
    child.kill('SIGKILL');
    await child.exited;
    await prepared.release();
  }
}

/** Flip `a` between a real directory and a symlink to `target`, as fast as the shell can. */
const swapLoop = (target: string) => `while :; do mv a a.real; ln -s ${target} a; mv a a.lnk; mv a.real a; rm -f a.lnk; done`;

describe.skipIf(!canRun || process.platform !== 'linux')('write and edit pin the directory they checked', () => {
  test('write never lands outside the checked directory when a concurrent command swaps it for a symlink', async () => {
    mkdirSync(join(fx.ws, 'a'));
    const hooks = join(fx.ws, '.git', 'hooks');
    const before = readdirSync(hooks);
    const t = await fileTools(fx.ws);
    const written: string[] = [];
    await whileRunning(swapLoop(hooks), async () => {
      // 300 attempts: the unpinned implementation lost this race within ~80.
      for (let i = 0; i < 300; i++) {
        const r = await t.run(t.write, { path: `a/pre-commit-${i}`, content: '#!/bin/sh\necho pwned\n' }).catch(() => null);
        if (r && !r.isError) written.push(`pre-commit-${i}`);
      }
    });
    // Neither a complete file nor a leftover temporary file of conch's in .git/hooks.
    expect(readdirSync(hooks)).toEqual(before);
    // Every write that reported success is in the workspace, outside .git. (Not necessarily in a/:
    // when conch created a/ while the loop had it moved away, the loop then moves it into a.real/.)
    const all = readdirSync(fx.ws, { recursive: true }) as string[];
    const landed = all.filter((p) => basename(p).startsWith('pre-commit-'));
    expect(landed.filter((p) => p.startsWith('.git')).length).toBe(0);
    expect(landed.map((p) => basename(p)).sort()).toEqual(written.sort());
    expect(all.filter((p) => p.includes(TEMP_MARKER))).toEqual([]);
  }, 60_000);

  test('edit never replaces a file outside the checked directory when a concurrent command swaps it for a symlink', async () => {
    mkdirSync(join(fx.ws, 'a'));
    const gitConfig = readFileSync(join(fx.ws, '.git', 'config'), 'utf8');
    // The same content as .git/config, so an edit meant for a/config would apply to either.
    writeFileSync(join(fx.ws, 'a', 'config'), gitConfig);
    const t = await fileTools(fx.ws);
    let version = 0;
    await whileRunning(swapLoop(join(fx.ws, '.git')), async () => {
      for (let i = 0; i < 2000; i++) {
        const edits = [{ old_text: `repositoryformatversion = ${version}`, new_text: `repositoryformatversion = ${1 - version}` }];
        const r = await t.run(t.edit, { path: 'a/config', edits }).catch(() => null);
        if (r && !r.isError) version = 1 - version;
      }
    });
    expect(readFileSync(join(fx.ws, '.git', 'config'), 'utf8')).toBe(gitConfig);
    expect((readdirSync(fx.ws, { recursive: true }) as string[]).filter((p) => p.includes(TEMP_MARKER))).toEqual([]);
  }, 60_000);
});

/** Every temporary file of conch's left anywhere under `dir`. */
const leftovers = (dir: string) => (readdirSync(dir, { recursive: true }) as string[]).filter((p) => p.includes(TEMP_MARKER));

// The same swaps, made deterministically at the last moment before the rename (the test hook).
describe.skipIf(!pinning)('a directory swapped between the check and the rename', () => {
  test('swapped for a symbolic link into .git/hooks: refused, nothing lands anywhere', async () => {
    mkdirSync(join(fx.ws, 'a'));
    const hooks = join(fx.ws, '.git', 'hooks');
    const t = await fileTools(fx.ws, {
      beforeRename: () => {
        renameSync(join(fx.ws, 'a'), join(fx.ws, 'a.real'));
        symlinkSync(hooks, join(fx.ws, 'a'));
      },
    });
    const r = await t.run(t.write, { path: 'a/pre-commit', content: 'x' });
    expect(r.isError).toBe(true);
    expect(r.text).toBe('a/pre-commit: a directory on its path was replaced or moved while conch was working on it; nothing was written. Check it (e.g. `ls -la a`) and retry.');
    expect(readdirSync(hooks)).toEqual([]);
    expect(readdirSync(join(fx.ws, 'a.real'))).toEqual([]);
    expect(leftovers(fx.ws)).toEqual([]);
  });

  test('moved out of the workspace: a workspace.outside PolicyError, nothing lands outside', async () => {
    mkdirSync(join(fx.ws, 'a'));
    writeFileSync(join(fx.ws, 'a', 'f.txt'), 'old\n');
    const away = join(fx.root, 'away'); // same file system as the workspace, so rename(2) can move it
    const t = await fileTools(fx.ws, { beforeRename: () => renameSync(join(fx.ws, 'a'), away) });
    const error = await t.run(t.write, { path: 'a/f.txt', content: 'new\n', expected_revision: sha('old\n') }).catch((e) => e);
    expect(error).toBeInstanceOf(PolicyError);
    expect(error.rule).toBe('workspace.outside');
    expect(readFileSync(join(away, 'f.txt'), 'utf8')).toBe('old\n');
    expect(readdirSync(away)).toEqual(['f.txt']);
  });

  test('edit: swapped for a link to .git, whose config has the same text, leaves .git/config alone', async () => {
    const gitConfig = readFileSync(join(fx.ws, '.git', 'config'), 'utf8');
    mkdirSync(join(fx.ws, 'a'));
    writeFileSync(join(fx.ws, 'a', 'config'), gitConfig);
    const t = await fileTools(fx.ws, {
      beforeRename: () => {
        renameSync(join(fx.ws, 'a'), join(fx.ws, 'a.real'));
        symlinkSync(join(fx.ws, '.git'), join(fx.ws, 'a'));
      },
    });
    const r = await t.run(t.edit, { path: 'a/config', edits: [{ old_text: 'repositoryformatversion = 0', new_text: 'hooksPath = /tmp/evil' }] });
    expect(r.isError).toBe(true);
    expect(readFileSync(join(fx.ws, '.git', 'config'), 'utf8')).toBe(gitConfig);
    expect(readFileSync(join(fx.ws, 'a.real', 'config'), 'utf8')).toBe(gitConfig);
    expect(leftovers(fx.ws)).toEqual([]);
  });

  test('a missing parent that turns into a symbolic link before the commit: the policy refuses, the link target gets nothing', async () => {
    const hooks = join(fx.ws, '.git', 'hooks');
    const t = await fileTools(fx.ws);
    // Checked while b/ is missing, so the policy allows b/c/x; then b appears as a link into .git.
    const abs = await t.workspace.resolve('b/c/x', 'write');
    symlinkSync(hooks, join(fx.ws, 'b'));
    const error = await commit(t.deps, abs, Buffer.from('x'), null).catch((e) => e);
    expect(error).toBeInstanceOf(PolicyError);
    expect(error.rule).toBe('workspace.protected');
    expect(readdirSync(hooks)).toEqual([]);
  });
});

describe.skipIf(!pinning)('PinnedDir', () => {
  test('makes missing directories inside their pinned parents and follows a move', async () => {
    const dir = await PinnedDir.open(join(fx.ws, 'x', 'y'), { create: true });
    try {
      expect(lstatSync(join(fx.ws, 'x', 'y')).isDirectory()).toBe(true);
      expect(dir.inPlace()).toBe(true);
      writeFileSync(dir.entry('f'), 'through the descriptor');
      renameSync(join(fx.ws, 'x'), join(fx.ws, 'moved'));
      expect(dir.location()).toBe(join(fx.ws, 'moved', 'y'));
      expect(dir.inPlace()).toBe(false);
      expect(readFileSync(join(fx.ws, 'moved', 'y', 'f'), 'utf8')).toBe('through the descriptor');
    } finally {
      dir.close();
    }
    expect(() => dir.entry('f')).toThrow('used after close()');
  });

  test('refuses a symbolic link on the way even when it points inside the workspace', async () => {
    symlinkSync(join(fx.ws, 'src'), join(fx.ws, 'alias'));
    const error = await PinnedDir.open(join(fx.ws, 'alias')).catch((e) => e);
    expect(error.code).toBe('ENOTDIR');
    expect(error.path).toBe(join(fx.ws, 'alias'));
    expect(existsSync(join(fx.ws, 'alias'))).toBe(true);
  });
});
