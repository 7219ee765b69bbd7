// A workspace that is not itself a repository root (a plain directory, or a package inside a
// monorepo) must not be turned into a git directory: HEAD, objects/, refs/ and a config at its root
// make the user's host git obey that config (core.fsmonitor runs unsandboxed). A root-level HEAD is
// protected for the file tools and, while the workspace has no real .git, masked in the sandbox;
// git in an ordinary repository keeps working and sees no placeholder.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadProtectedDefaults } from '../../src/sandbox/profiles.ts';
import { defaultPatterns, planProtected } from '../../src/sandbox/protected-paths.ts';
import { PolicyError } from '../../src/core/errors.ts';
import { fileTools } from '../support/file-tools.ts';
import { bashExecutor, canRun, fixture, sandboxed, snapshot, type Fixture } from './harness.ts';

const GIT = ['/usr/bin/git', Bun.which('git')].find((p): p is string => !!p && existsSync(p)) ?? null;

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

/** Host git with no user or system config, as a user reviewing the workspace would run it. */
function hostGit(cwd: string, ...args: string[]) {
  const result = Bun.spawnSync([GIT!, ...args], {
    cwd,
    env: { PATH: '/usr/bin:/bin', HOME: fx.root, GIT_CONFIG_NOSYSTEM: '1' },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** A monorepo at fx.ws/repo with the workspace at its subdirectory pkg. */
function packageWorkspace(): { repo: string; pkg: string } {
  const repo = join(fx.ws, 'repo');
  const pkg = join(repo, 'pkg');
  mkdirSync(pkg, { recursive: true });
  hostGit(repo, 'init', '-q');
  return { repo, pkg };
}

const gitDirFiles = (marker: string): [string, string][] => [
  ['HEAD', 'ref: refs/heads/main\n'],
  ['objects/info/keep', ''],
  ['refs/heads/keep', ''],
  ['config', `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch ${marker}; false"\n`],
];

describe('planning: a root HEAD is masked only while the workspace has no real .git', () => {
  const headTarget = (root: string) => planProtected(root, defaultPatterns(loadProtectedDefaults())).targets.find((t) => t.path === join(root, 'HEAD'));

  test('no .git, an empty .git directory (a placeholder), an empty .git/HEAD: masked', () => {
    const root = join(fx.root, 'plain');
    mkdirSync(root);
    expect(headTarget(root)).toEqual({ path: join(root, 'HEAD'), kind: 'file', exists: false });
    mkdirSync(join(root, '.git'));
    expect(headTarget(root)?.exists).toBe(false);
    writeFileSync(join(root, '.git', 'HEAD'), '');
    expect(headTarget(root)?.exists).toBe(false);
  });

  test('a .git directory with a HEAD, or a .git file (worktree, submodule): not masked', () => {
    expect(headTarget(fx.ws)).toBeUndefined(); // the fixture has .git/HEAD
    const worktree = join(fx.root, 'worktree');
    mkdirSync(worktree);
    writeFileSync(join(worktree, '.git'), 'gitdir: /somewhere/.git/worktrees/x\n');
    expect(headTarget(worktree)).toBeUndefined();
  });

  test('an existing root HEAD is held whatever .git is', () => {
    writeFileSync(join(fx.ws, 'HEAD'), 'ref: refs/heads/main\n');
    expect(headTarget(fx.ws)).toEqual({ path: join(fx.ws, 'HEAD'), kind: 'file', exists: true });
  });
});

describe('file tools', () => {
  test('a root-level HEAD cannot be written; HEAD deeper down can', async () => {
    const t = await fileTools(fx.ws);
    const refused = await t.run(t.write, { path: 'HEAD', content: 'ref: refs/heads/main\n' }).catch((e) => e);
    expect(refused).toBeInstanceOf(PolicyError);
    expect(refused.rule).toBe('workspace.protected');
    expect(existsSync(join(fx.ws, 'HEAD'))).toBe(false);
    const allowed = await t.run(t.write, { path: 'docs/HEAD', content: 'a file called HEAD\n' });
    expect(allowed.isError).toBeFalsy();
  });

  test.skipIf(GIT === null)('the file tools cannot make a repository subdirectory a git dir for host git', async () => {
    const { pkg } = packageWorkspace();
    const marker = join(fx.root, 'PWNED');
    const t = await fileTools(pkg);
    const refused: string[] = [];
    for (const [path, content] of gitDirFiles(marker)) {
      await t.run(t.write, { path, content }).catch((error) => {
        if (!(error instanceof PolicyError)) throw error;
        refused.push(path);
      });
    }
    expect(refused).toEqual(['HEAD']);
    hostGit(pkg, 'status');
    expect(existsSync(marker)).toBe(false);
  });
});

describe.skipIf(!canRun || GIT === null)('sandboxed commands', () => {
  for (const where of ['a plain directory', 'a repository subdirectory'] as const) {
    test(`cannot make ${where} a git dir that host git obeys`, async () => {
      let workspace = join(fx.ws, 'plain');
      if (where === 'a plain directory') mkdirSync(workspace);
      else workspace = packageWorkspace().pkg;
      const marker = join(fx.root, 'PWNED');
      const script = gitDirFiles(marker)
        .map(([path, content]) => `mkdir -p "$(dirname ${path})"; printf '%s' '${content}' > ${path}`)
        .join('; ');
      const result = await sandboxed(fx, `${script}; cat HEAD`, { workspace, cwd: workspace });
      expect(result.stderr).toContain('HEAD: Read-only file system');
      expect(result.stdout).toBe(''); // HEAD reads as the empty placeholder
      expect(existsSync(join(workspace, 'HEAD'))).toBe(false); // and it is gone afterwards
      hostGit(workspace, 'status');
      expect(existsSync(marker)).toBe(false);
    });
  }

  // Root or not (root keeps no capability in the sandbox's user namespace), a real repository's git dir
  // is read-only as a whole, and what a command may put beside it changes nothing for host git.
  test('in a real repository a command can plant nothing in .git (HEAD, objects, refs, packed-refs), and a git dir beside it is ignored by host git', async () => {
    rmSync(join(fx.ws, '.git'), { recursive: true });
    expect(hostGit(fx.ws, 'init', '-q').code).toBe(0);
    expect(hostGit(fx.ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'first').code).toBe(0);
    const before = snapshot(join(fx.ws, '.git'));
    const marker = join(fx.root, 'PWNED');
    const plant = [
      'echo 0000000000000000000000000000000000000000 > .git/HEAD',
      'mkdir -p .git/objects/ab && echo x > .git/objects/ab/cd',
      'echo 0000000000000000000000000000000000000000 > .git/refs/heads/evil',
      'echo x >> .git/packed-refs',
      'mount -o remount,rw .git',
      'umount .git',
    ].map((c) => `${c} 2>/dev/null && echo PLANTED`);
    const beside = gitDirFiles(marker).map(([rel, text]) => `mkdir -p "$(dirname ${rel})" && printf '%s' '${text}' > ${rel}`);
    const result = await sandboxed(fx, [...plant, ...beside].join('; '));
    expect(result.stdout).not.toContain('PLANTED');
    expect(snapshot(join(fx.ws, '.git'))).toBe(before);
    // git looks for .git before it takes the directory itself for one: the config beside it is not read.
    expect(readFileSync(join(fx.ws, 'config'), 'utf8')).toContain('fsmonitor');
    expect(hostGit(fx.ws, 'rev-parse', '--absolute-git-dir').stdout.trim()).toBe(join(fx.ws, '.git'));
    hostGit(fx.ws, 'status');
    expect(existsSync(marker)).toBe(false);
  });

  test('git works in an ordinary repository and sees no HEAD placeholder', async () => {
    rmSync(join(fx.ws, '.git'), { recursive: true });
    expect(hostGit(fx.ws, 'init', '-q').code).toBe(0);
    hostGit(fx.ws, 'add', 'src');
    expect(hostGit(fx.ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'first').code).toBe(0);
    writeFileSync(join(fx.ws, 'src', 'main.txt'), 'changed\n');
    const result = await sandboxed(fx, `HOME=/tmp ${GIT} status --porcelain --untracked-files=all -- . ':!.env*' && HOME=/tmp ${GIT} log --format=%s && ls`);
    expect(result.stderr).toBe('');
    expect(result).toMatchObject({ code: 0, stdout: ' M src/main.txt\nfirst\nsrc\n' });
  });
});

// A workspace that is itself a git dir (conch started in a bare repository, a worktree's admin dir, a
// repository's .git): its config, hooks, commondir … are what the user's git runs, and there is no
// work tree in it, so write and edit refuse all of it and commands see all of it read-only.
describe.skipIf(GIT === null)('a workspace that is itself a git dir', () => {
  /** fx.ws made a bare repository (nothing of the fixture's work tree left). */
  function bareWorkspace(): string {
    rmSync(fx.ws, { recursive: true, force: true });
    expect(hostGit(fx.root, 'init', '-q', '--bare', fx.ws).code).toBe(0);
    return fx.ws;
  }
  /** fx.ws made the admin dir of a linked worktree (HEAD, commondir, gitdir; config and hooks in the common dir). */
  function worktreeAdminWorkspace(): string {
    const main = join(fx.root, 'main');
    hostGit(fx.root, 'init', '-q', main);
    hostGit(main, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'first');
    hostGit(main, 'worktree', 'add', '-q', join(fx.root, 'linked'));
    return join(main, '.git', 'worktrees', 'linked');
  }
  const attempts = ['hooks/pre-commit', 'hooks/post-checkout', 'config', 'commondir', 'packed-refs', 'info/attributes', 'refs/heads/x', 'worktrees/x/config', 'notes.txt'];

  test('write and edit refuse every name in it, new or not, and say why; read still works', async () => {
    const bare = bareWorkspace();
    const before = snapshot(bare);
    const t = await fileTools(bare);
    for (const path of attempts) {
      const refused = await t.run(t.write, { path, content: '#!/bin/sh\ntouch /tmp/pwned\n' }).catch((e) => e);
      expect(refused).toBeInstanceOf(PolicyError);
      expect(refused.rule).toBe('workspace.protected');
      expect(refused.message).toContain('the workspace is itself a git dir');
      expect(refused.message).toContain('--unrestricted');
    }
    const config = await t.run(t.read, { path: 'config' });
    expect(config.text).toContain('bare = true');
    const edited = await t.run(t.edit, { path: 'config', old_string: 'bare = true', new_string: 'bare = true\n\tfsmonitor = touch /tmp/pwned' }).catch((e) => e);
    expect(edited).toBeInstanceOf(PolicyError);
    expect(snapshot(bare)).toBe(before);
    expect(hostGit(bare, 'config', 'core.fsmonitor').code).toBe(1);
  });

  test("the file tools refuse a worktree's admin dir as the workspace too", async () => {
    const admin = worktreeAdminWorkspace();
    const t = await fileTools(admin);
    const refused = await t.run(t.write, { path: 'config.worktree', content: '[core]\n\tfsmonitor = touch /tmp/pwned\n' }).catch((e) => e);
    expect(refused).toBeInstanceOf(PolicyError);
    expect(existsSync(join(admin, 'config.worktree'))).toBe(false);
  });

  test('a writable root that is a bare repository is refused as a whole; the workspace stays writable', async () => {
    const bare = join(fx.root, 'other.git');
    expect(hostGit(fx.root, 'init', '-q', '--bare', bare).code).toBe(0);
    const t = await fileTools(fx.ws, {}, { writableRoots: [bare] });
    const refused = await t.run(t.write, { path: join(bare, 'hooks', 'pre-commit'), content: 'x\n' }).catch((e) => e);
    expect(refused).toBeInstanceOf(PolicyError);
    expect(refused.message).toContain(`the writable root ${bare} is itself a git dir`);
    expect(existsSync(join(bare, 'hooks', 'pre-commit'))).toBe(false);
    expect((await t.run(t.write, { path: 'src/new.txt', content: 'fine\n' })).isError).toBeFalsy();
  });

  test("a workspace inside a git dir (.git/hooks, a bare repository's hooks) is refused as a whole; a work tree inside one is not", async () => {
    const repo = join(fx.root, 'repo');
    expect(hostGit(fx.root, 'init', '-q', repo).code).toBe(0);
    for (const hooks of [join(repo, '.git', 'hooks'), join(bareWorkspace(), 'hooks')]) {
      const t = await fileTools(hooks);
      const refused = await t.run(t.write, { path: 'pre-commit', content: '#!/bin/sh\ntouch /tmp/pwned\n' }).catch((e) => e);
      expect(refused).toBeInstanceOf(PolicyError);
      expect(refused.message).toContain("the workspace lies inside the git dir '..'");
      expect(existsSync(join(hooks, 'pre-commit'))).toBe(false);
    }
    // A checkout kept inside a bare repository's folder: git finds its own .git first.
    const tree = join(fx.ws, 'checkout');
    expect(hostGit(fx.root, 'clone', '-q', fx.ws, tree).code).toBe(0);
    const t = await fileTools(tree);
    expect((await t.run(t.write, { path: 'src.txt', content: 'fine\n' })).isError).toBeFalsy();
  });

  test('--unrestricted writes freely', async () => {
    const bare = bareWorkspace();
    const t = await fileTools(bare, {}, { unrestricted: true });
    expect((await t.run(t.write, { path: 'hooks/pre-commit', content: '#!/bin/sh\n' })).isError).toBeFalsy();
    expect(existsSync(join(bare, 'hooks', 'pre-commit'))).toBe(true);
  });

  describe.skipIf(!canRun)('sandboxed commands', () => {
    const script = [
      "echo '#!/bin/sh' > hooks/post-checkout",
      `${GIT} config -f config core.fsmonitor 'touch /tmp/pwned'`,
      'echo ../elsewhere > commondir',
      'mkdir -p worktrees/x',
      'echo x > notes.txt',
      'rm -f description',
      'mv config config.old',
    ].join('; ');

    for (const [what, make] of [['a bare repository', bareWorkspace], ["a worktree's admin dir", worktreeAdminWorkspace]] as const) {
      test(`see ${what} read-only as a whole, and can still read it`, async () => {
        const workspace = make();
        const before = snapshot(workspace);
        const result = await sandboxed(fx, `${script}; cat HEAD`, { workspace, cwd: workspace });
        expect(result.stderr).toContain('could not lock config file config: Read-only file system');
        expect(result.stderr).toContain('commondir: Read-only file system');
        expect(result.stderr).toContain('notes.txt: Read-only file system');
        expect(result.stdout).toMatch(/^ref: refs\/heads\//); // HEAD is the real one, readable
        expect(snapshot(workspace)).toBe(before);
      });
    }

    test('see a workspace inside a git dir (.git/hooks) read-only as a whole', async () => {
      const repo = join(fx.root, 'repo');
      expect(hostGit(fx.root, 'init', '-q', repo).code).toBe(0);
      const hooks = join(repo, '.git', 'hooks');
      const before = snapshot(hooks);
      const result = await sandboxed(fx, "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > post-checkout; ls pre-commit.sample", { workspace: hooks, cwd: hooks });
      expect(result.stderr).toContain('post-checkout: Read-only file system');
      expect(result.stdout).toBe('pre-commit.sample\n');
      expect(snapshot(hooks)).toBe(before);
    });

    test('a writable root that is a bare repository is mounted read-only, not refused; the workspace stays writable', async () => {
      const bare = join(fx.root, 'other.git');
      expect(hostGit(fx.root, 'init', '-q', '--bare', bare).code).toBe(0);
      const before = snapshot(bare);
      const result = await sandboxed(fx, `echo x > ${bare}/hooks/pre-commit; echo y > ${bare}/notes; echo z > src/new.txt`, { writableRoots: [bare] });
      expect(result.stderr).toContain(`${bare}/hooks/pre-commit: Read-only file system`);
      expect(result.stderr).toContain(`${bare}/notes: Read-only file system`);
      expect(readFileSync(join(fx.ws, 'src', 'new.txt'), 'utf8')).toBe('z\n');
      expect(snapshot(bare)).toBe(before);
    });

    test('the bash tool says why a write failed there', async () => {
      bareWorkspace();
      const run = await bashExecutor(fx);
      const failed = await run('echo x > hooks/pre-commit');
      expect(failed.exitCode).not.toBe(0);
      expect(failed.notes).toEqual([expect.stringContaining('the workspace is itself a git dir')]);
      const fine = await run('cat HEAD');
      expect(fine.exitCode).toBe(0);
      expect(fine.notes).toBeUndefined();
    });

    test('`git init --bare .` cannot make an empty workspace a git dir: HEAD stays the empty placeholder', async () => {
      const empty = join(fx.root, 'empty');
      mkdirSync(empty);
      const result = await sandboxed(fx, `${GIT} init -q --bare . && cat HEAD`, { workspace: empty, cwd: empty });
      expect(result.stdout).toBe('');
      expect(existsSync(join(empty, 'HEAD'))).toBe(false);
      expect(hostGit(empty, 'rev-parse', '--absolute-git-dir').code).not.toBe(0);
    });
  });
});
