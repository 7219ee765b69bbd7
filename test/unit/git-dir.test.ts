// When a directory is itself a git dir for git (core/git-dir.ts), checked against git's own answer
// where git is at hand: the file tools, the sandbox and the after-run check all ask this.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitDirAround, rootIsGitDir } from '../../src/core/git-dir.ts';

const GIT = ['/usr/bin/git', Bun.which('git')].find((p): p is string => !!p && existsSync(p)) ?? null;

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-gitdir-')));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The git dir host git finds from `dir`, looking no higher than the test's root. */
function gitDirOf(dir: string): string | null {
  const result = Bun.spawnSync([GIT!, 'rev-parse', '--absolute-git-dir'], {
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', HOME: root, GIT_CONFIG_NOSYSTEM: '1', GIT_CEILING_DIRECTORIES: root },
  });
  return result.exitCode === 0 ? result.stdout.toString().trim() : null;
}

function bareShape(dir: string) {
  for (const sub of ['objects', 'refs/heads']) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
}

describe('rootIsGitDir', () => {
  test.skipIf(GIT === null)('a bare repository is one, as git says', () => {
    const bare = join(root, 'bare');
    Bun.spawnSync([GIT!, 'init', '-q', '--bare', bare]);
    expect(rootIsGitDir(bare)).toBe(true);
    expect(gitDirOf(bare)).toBe(bare);
  });

  test.skipIf(GIT === null)("a worktree's admin dir (HEAD and a commondir) is one, as git says", () => {
    const main = join(root, 'main');
    Bun.spawnSync([GIT!, 'init', '-q', main]);
    Bun.spawnSync([GIT!, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'x'], { cwd: main });
    Bun.spawnSync([GIT!, 'worktree', 'add', '-q', join(root, 'wt')], { cwd: main });
    const admin = join(main, '.git', 'worktrees', 'wt');
    expect(rootIsGitDir(admin)).toBe(true);
    expect(gitDirOf(admin)).toBe(admin);
    // The repository's .git opened as a folder of its own is one too; the work tree above it is not.
    expect(rootIsGitDir(join(main, '.git'))).toBe(true);
    expect(rootIsGitDir(main)).toBe(false);
    expect(rootIsGitDir(join(root, 'wt'))).toBe(false);
  });

  test.skipIf(GIT === null)('HEAD, objects and refs beside a repository .git are work-tree files: git takes the .git', () => {
    Bun.spawnSync([GIT!, 'init', '-q', root]);
    bareShape(root);
    expect(rootIsGitDir(root)).toBe(false);
    expect(gitDirOf(root)).toBe(join(root, '.git'));
    // An empty .git directory (a placeholder) is no repository: git looks at the top itself.
    rmSync(join(root, '.git'), { recursive: true });
    mkdirSync(join(root, '.git'));
    expect(rootIsGitDir(root)).toBe(true);
    expect(gitDirOf(root)).toBe(root);
  });

  test('a name about to be written counts: HEAD and objects with refs to come is one', () => {
    mkdirSync(join(root, 'objects'));
    writeFileSync(join(root, 'HEAD'), 'ref: refs/heads/main\n');
    expect(rootIsGitDir(root)).toBe(false);
    expect(rootIsGitDir(root, 'refs')).toBe(true);
    expect(rootIsGitDir(root, 'src')).toBe(false);
    expect(rootIsGitDir(root, 'commondir')).toBe(true);
  });
});

describe.skipIf(GIT === null)('gitDirAround', () => {
  test('the git dir a folder lies inside, as git searching upward finds it; none past a work tree', () => {
    const bare = join(root, 'bare');
    const repo = join(root, 'repo');
    Bun.spawnSync([GIT!, 'init', '-q', '--bare', bare]);
    Bun.spawnSync([GIT!, 'init', '-q', repo]);
    const checkout = join(bare, 'checkout');
    Bun.spawnSync([GIT!, 'clone', '-q', bare, checkout]);
    mkdirSync(join(checkout, 'src'));
    const cases: [string, string | null][] = [
      [bare, bare],
      [join(bare, 'hooks'), bare],
      [join(bare, 'refs', 'heads'), bare],
      [join(repo, '.git', 'hooks'), join(repo, '.git')],
      [repo, null],
      [join(checkout, 'src'), null],
      [root, null],
    ];
    for (const [dir, expected] of cases) {
      expect([dir, gitDirAround(dir)]).toEqual([dir, expected]);
      if (expected !== null) expect(gitDirOf(dir)).toBe(expected);
    }
    expect(gitDirOf(join(checkout, 'src'))).toBe(join(checkout, '.git'));
  });
});
