// The nested-repository check on its own (workspace/nested-git.ts): which configs count as plain,
// and what is disabled after a run; the sandboxed commands that make them are in
// test/integration/nested-git.test.ts.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nestedGitGuard, unsafeConfig } from '../../src/workspace/nested-git.ts';

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-nested-')));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A git dir's minimal shape (HEAD, objects/, refs/) at `dir`, with `config`. */
function gitDir(dir: string, config: string) {
  for (const sub of ['objects', 'refs/heads']) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(dir, 'config'), config);
}

describe('unsafeConfig', () => {
  test('what git init, clone and remote add write is plain', () => {
    const plain = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n' +
      '[remote "origin"]\n\turl = https://example.com/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n';
    expect(unsafeConfig(plain)).toBeNull();
  });

  test('a key that runs something, an include, or a line that is not key = value is not', () => {
    expect(unsafeConfig('[core]\n\tfsmonitor = touch x\n')).toBe('core.fsmonitor');
    expect(unsafeConfig('[core]\n\thooksPath = /tmp/h\n')).toBe('core.hookspath');
    expect(unsafeConfig('[include]\n\tpath = other\n')).toBe('include.path');
    expect(unsafeConfig('[filter "x"]\n\tclean = sh -c evil\n')).toBe('filter.x.clean');
    expect(unsafeConfig('[core] fsmonitor = touch x\n')).toBe('[core] fsmonitor = touch x');
    expect(unsafeConfig('[core]\n\tbare = \\\nfalse\n')).not.toBeNull();
  });
});

describe('nestedGitGuard', () => {
  test('a bare repository made during the run has its config disabled; the user repository from before the run is left alone', () => {
    gitDir(join(root, 'before'), '[core]\n\tfsmonitor = mine\n');
    const guard = nestedGitGuard([root]);
    guard.baseline();
    gitDir(join(root, 'deep/er/bare'), '[core]\n\tfsmonitor = touch x\n');
    const lines = guard.check();
    expect(existsSync(join(root, 'deep/er/bare/config'))).toBe(false);
    expect(readFileSync(join(root, 'deep/er/bare/config.conch-disabled'), 'utf8')).toContain('fsmonitor');
    expect(readFileSync(join(root, 'before/config'), 'utf8')).toBe('[core]\n\tfsmonitor = mine\n');
    expect(lines).toEqual([expect.stringContaining('deep/er/bare/config (it sets core.fsmonitor)')]);
  });

  test('a git dir that takes its objects, refs and config from a commondir is found too: its commondir is disabled', () => {
    // HEAD here, everything else in y/: git takes x for a git dir and runs y/config's pager.
    mkdirSync(join(root, 'x'));
    const guard = nestedGitGuard([root]);
    guard.baseline();
    for (const sub of ['objects', 'refs']) mkdirSync(join(root, 'y', sub), { recursive: true });
    writeFileSync(join(root, 'y/config'), '[core]\n\tpager = touch pwned; cat\n');
    writeFileSync(join(root, 'x/HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(join(root, 'x/commondir'), '../y\n');
    const gitDirOfX = () => Bun.spawnSync(['git', 'rev-parse', '--git-common-dir'], { cwd: join(root, 'x'), env: { ...process.env, GIT_CEILING_DIRECTORIES: root } });
    expect(gitDirOfX().stdout.toString().trim()).toBe(join(root, 'y'));
    const lines = guard.check();
    expect(existsSync(join(root, 'x/commondir'))).toBe(false);
    expect(existsSync(join(root, 'x/commondir.conch-disabled'))).toBe(true);
    expect(lines).toEqual([expect.stringContaining('x/commondir (it takes the config from elsewhere)')]);
    expect(gitDirOfX().exitCode).not.toBe(0);
  });

  test('without a baseline (no command ran) nothing is checked; the roots own .git is never touched', () => {
    const guard = nestedGitGuard([root]);
    gitDir(join(root, 'sub/.git'), '[core]\n\tfsmonitor = touch x\n');
    expect(guard.check()).toEqual([]);
    guard.baseline();
    gitDir(join(root, '.git'), '[core]\n\tfsmonitor = the user\n');
    expect(guard.check()).toEqual([]);
    expect(existsSync(join(root, '.git/config'))).toBe(true);
  });
  test('a root made a git dir during the run is checked as a nested one; a root that was a bare repository before is left alone', () => {
    const guard = nestedGitGuard([root]);
    guard.baseline();
    gitDir(root, '[core]\n\tbare = true\n\tfsmonitor = touch x\n');
    mkdirSync(join(root, 'hooks'));
    writeFileSync(join(root, 'hooks', 'post-checkout'), '#!/bin/sh\ntouch x\n');
    const lines = guard.check();
    expect(existsSync(join(root, 'config'))).toBe(false);
    expect(existsSync(join(root, 'hooks'))).toBe(false);
    expect(existsSync(join(root, 'hooks.conch-disabled', 'post-checkout'))).toBe(true);
    expect(lines).toEqual([
      expect.stringContaining('left the workspace, itself a git dir, with the file config (it sets core.fsmonitor)'),
      expect.stringContaining('hooks (it holds post-checkout)'),
    ]);

    const bare = realpathSync(mkdtempSync(join(tmpdir(), 'conch-nested-bare-')));
    try {
      gitDir(bare, '[core]\n\tbare = true\n\tfsmonitor = the user\n');
      const own = nestedGitGuard([bare]);
      own.baseline();
      writeFileSync(join(bare, 'notes'), 'the run wrote elsewhere\n');
      expect(own.check()).toEqual([]);
      expect(readFileSync(join(bare, 'config'), 'utf8')).toContain('the user');
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  test('node_modules is not walked: a repository made there is left, as the README says', () => {
    const guard = nestedGitGuard([root]);
    guard.baseline();
    gitDir(join(root, 'node_modules', 'pkg', '.git'), '[core]\n\tfsmonitor = touch x\n');
    gitDir(join(root, 'src', '.git'), '[core]\n\tfsmonitor = touch x\n');
    const lines = guard.check();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(join('src', '.git', 'config'));
    expect(existsSync(join(root, 'node_modules', 'pkg', '.git', 'config'))).toBe(true);
  });
});
