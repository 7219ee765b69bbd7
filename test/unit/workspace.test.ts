import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PolicyError } from '../../src/core/errors.ts';
import { canonicalize, Workspace, type WorkspaceOptions } from '../../src/workspace/paths.ts';

let base: string; // canonical temp dir holding `ws` (the workspace) and `outside`
let root: string;
let outside: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-ws-')));
  root = join(base, 'ws');
  outside = join(base, 'outside');
  await mkdir(join(root, 'src'), { recursive: true });
  await mkdir(join(root, '.git'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(root, 'src', 'a.ts'), 'a');
  await writeFile(join(outside, 'secret.txt'), 's');
  await symlink(outside, join(root, 'out-link')); // symlinked directory pointing outside
  await symlink(join(outside, 'secret.txt'), join(root, 'file-link')); // file link pointing outside
  await symlink(join(outside, 'not-yet'), join(root, 'dangling')); // dangling link pointing outside
  await symlink(join(root, 'src', 'a.ts'), join(root, 'inner-link')); // link staying inside
  await symlink(join(root, '.git'), join(root, 'git-alias')); // inside, but into a protected dir
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

function open(options: Partial<WorkspaceOptions> = {}): Promise<Workspace> {
  return Workspace.open({ root, unrestricted: false, ...options });
}

async function refusal(promise: Promise<unknown>): Promise<PolicyError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PolicyError) return error;
    throw error;
  }
  throw new Error('expected a PolicyError, but the path was allowed');
}

describe('Workspace.open and display', () => {
  test('the root is canonical even when opened through a symlink', async () => {
    await symlink(root, join(base, 'ws-alias'));
    const ws = await Workspace.open({ root: join(base, 'ws-alias'), unrestricted: false });
    expect(ws.root).toBe(root);
    expect(await ws.resolve('src/a.ts', 'write')).toBe(join(root, 'src', 'a.ts'));
    // The alias spelling of an inside path is inside too.
    expect(await ws.resolve(join(base, 'ws-alias', 'src', 'b.ts'), 'write')).toBe(join(root, 'src', 'b.ts'));
  });

  test('display is workspace-relative inside, "." for the root, absolute outside', async () => {
    const ws = await open();
    expect(ws.display(join(root, 'src', 'a.ts'))).toBe('src/a.ts');
    expect(ws.display(root)).toBe('.');
    expect(ws.display(join(outside, 'x'))).toBe(join(outside, 'x'));
    expect(ws.display(`${root}-sibling/x`)).toBe(`${root}-sibling/x`);
  });

  test('canonicalize goes through the nearest existing ancestor', async () => {
    expect(await canonicalize(join(root, 'out-link', 'deep', 'new.txt'))).toBe(join(outside, 'deep', 'new.txt'));
    expect(await canonicalize(join(root, 'dangling'))).toBe(join(outside, 'not-yet'));
    expect(await canonicalize(join(root, 'missing', '..', 'src', 'a.ts'))).toBe(join(root, 'src', 'a.ts'));
  });
});

describe('write containment', () => {
  test('relative and new paths inside are allowed and returned canonical', async () => {
    const ws = await open();
    expect(await ws.resolve('src/new/deep.ts', 'write')).toBe(join(root, 'src', 'new', 'deep.ts'));
    expect(await ws.resolve('src/../README.md', 'write')).toBe(join(root, 'README.md'));
    expect(await ws.resolve('inner-link', 'write')).toBe(join(root, 'src', 'a.ts'));
  });

  test('../ traversal is refused, naming the path and --unrestricted', async () => {
    const ws = await open();
    const error = await refusal(ws.resolve('../outside/secret.txt', 'write'));
    expect(error.rule).toBe('workspace.outside');
    expect(error.message).toContain("'../outside/secret.txt' is outside the workspace");
    expect(error.message).toContain('--unrestricted');
    expect((await refusal(ws.resolve('src/../../x', 'write'))).rule).toBe('workspace.outside');
  });

  test('absolute paths outside are refused', async () => {
    const ws = await open();
    expect((await refusal(ws.resolve(join(outside, 'secret.txt'), 'write'))).rule).toBe('workspace.outside');
    expect((await refusal(ws.resolve('/etc/passwd', 'write'))).rule).toBe('workspace.outside');
  });

  test('a link inside pointing outside is refused as a symlink escape', async () => {
    const ws = await open();
    const error = await refusal(ws.resolve('file-link', 'write'));
    expect(error.rule).toBe('workspace.outside');
    expect(error.message).toContain("'file-link' resolves through a symbolic link");
    expect(error.message).not.toContain(outside);
  });

  test('a symlinked parent directory is refused, for existing and new files', async () => {
    const ws = await open();
    expect((await refusal(ws.resolve('out-link/secret.txt', 'write'))).rule).toBe('workspace.outside');
    expect((await refusal(ws.resolve('out-link/new/file.txt', 'write'))).rule).toBe('workspace.outside');
  });

  test('a dangling link pointing outside is refused (writing would create the file outside)', async () => {
    const ws = await open();
    expect((await refusal(ws.resolve('dangling', 'write'))).rule).toBe('workspace.outside');
  });

  test('extra writable roots are allowed', async () => {
    const ws = await open({ writableRoots: [outside] });
    expect(await ws.resolve(join(outside, 'x.txt'), 'write')).toBe(join(outside, 'x.txt'));
    expect(await ws.resolve('out-link/y.txt', 'write')).toBe(join(outside, 'y.txt'));
  });

  test('unrestricted bypasses containment and protection', async () => {
    const ws = await open({ unrestricted: true });
    expect(await ws.resolve('../outside/secret.txt', 'write')).toBe(join(outside, 'secret.txt'));
    expect(await ws.resolve('.git/config', 'write')).toBe(join(root, '.git', 'config'));
    expect(await ws.resolve('.env', 'write')).toBe(join(root, '.env'));
  });
});

describe('protected paths', () => {
  test('.git, .conch, .env and .env.* at the root are refused', async () => {
    const ws = await open();
    for (const path of ['.git', '.git/config', '.git/hooks/pre-commit', '.conch/config.json', '.env', '.env.local', '.env.production']) {
      const error = await refusal(ws.resolve(path, 'write'));
      expect(error.rule).toBe('workspace.protected');
      expect(error.message).toContain(`'${path}' is protected`);
      expect(error.message).toContain('--unrestricted');
    }
  });

  test('nothing goes inside a protected name either: .env, .env.* and HEAD made (or kept) as directories', async () => {
    // Commands see these read-only whatever they are; a .env directory would swallow the user's `cp .env.example .env`.
    const ws = await open({ writableRoots: [outside] });
    for (const path of ['.env/x', '.env.local/x', 'HEAD/x', join(outside, '.env/x'), join(outside, 'HEAD/x')]) {
      expect((await refusal(ws.resolve(path, 'write'))).rule).toBe('workspace.protected');
    }
  });

  test('look-alikes and nested .env files are not protected by default', async () => {
    const ws = await open();
    for (const path of ['.envrc', 'src/.env', '.gitignore', 'docs/.git-notes']) {
      expect(await ws.resolve(path, 'write')).toBe(join(root, path));
    }
  });

  test('a link inside that leads into .git is refused', async () => {
    const ws = await open();
    expect((await refusal(ws.resolve('git-alias/config', 'write'))).rule).toBe('workspace.protected');
  });

  test("a writable root's own .git, .conch and .env files are refused as the workspace's are; the rest of it is writable", async () => {
    const ws = await open({ writableRoots: [outside] });
    for (const path of ['.git/hooks/pre-commit', '.git', '.conch/config.json', '.env', '.env.local', 'HEAD']) {
      const error = await refusal(ws.resolve(join(outside, path), 'write'));
      expect(error.rule).toBe('workspace.protected');
    }
    // Through the workspace's link into the root too.
    expect((await refusal(ws.resolve('out-link/.git/config', 'write'))).rule).toBe('workspace.protected');
    expect(await ws.resolve(join(outside, 'src/.env'), 'write')).toBe(join(outside, 'src/.env'));
    expect(await ws.resolve(join(outside, 'notes.txt'), 'write')).toBe(join(outside, 'notes.txt'));
  });

  test('a git dir without a .git (a bare repository, or HEAD with a commondir) is protected, and so is what would make one', async () => {
    // git takes such a folder for a git dir and runs its config (core.pager, core.fsmonitor) in the user's own git.
    const at = (rel: string) => join(root, 'nested', rel);
    for (const dir of ['bare.git/objects', 'bare.git/refs', 'linked', 'half/objects', 'half/refs', 'headed', 'common/objects', 'common/refs']) await mkdir(at(dir), { recursive: true });
    await writeFile(at('bare.git/HEAD'), 'ref: refs/heads/main\n');
    await writeFile(at('linked/HEAD'), 'ref: refs/heads/main\n');
    await writeFile(at('linked/commondir'), '../common\n');
    await writeFile(at('headed/HEAD'), 'ref: refs/heads/main\n');
    const ws = await open();
    const refused = [
      'bare.git/config', 'bare.git/hooks/post-checkout', 'bare.git/HEAD', // inside an existing one
      'linked/config', 'linked/commondir', // HEAD + commondir: a git dir whose objects and refs are elsewhere
      'half/HEAD', // objects/ and refs/ are there: HEAD completes it
      'headed/commondir', // HEAD is there: a commondir completes it
    ];
    for (const rel of refused) {
      const error = await refusal(ws.resolve(join('nested', rel), 'write'));
      expect(error.rule).toBe('workspace.protected');
      expect(error.message).toContain(`'nested/${rel}' is protected`);
      expect(error.message).toContain('git dir');
    }
    // Not a git dir, nor one write away from being one.
    for (const rel of ['headed/notes.txt', 'headed/objects/x', 'half/notes.txt', 'common/config', 'common/objects/x', 'src/HEAD.md']) {
      expect(await ws.resolve(join('nested', rel), 'write')).toBe(at(rel));
    }
    expect(await ws.resolve('nested/bare.git/config', 'read')).toBe(at('bare.git/config'));
  });

  test('protected names in another case are refused on every platform: a case-insensitive mount (WSL /mnt/c, vfat, ext4 casefold) makes them the same file', async () => {
    await mkdir(join(root, 'nested', 'upper', 'objects'), { recursive: true });
    await mkdir(join(root, 'nested', 'upper', 'refs'), { recursive: true });
    const ws = await open();
    for (const path of ['.GIT/config', '.Git/hooks/pre-commit', '.ENV', '.Env.Local', '.CONCH/config.json', 'sub/.GIT/config', 'head', 'nested/upper/head']) {
      expect((await refusal(ws.resolve(path, 'write'))).rule).toBe('workspace.protected');
    }
  });

  test('extra protected globs add to the defaults', async () => {
    const ws = await open({ protectedGlobs: ['secrets/**', '**/*.lock'] });
    expect((await refusal(ws.resolve('secrets/key', 'write'))).rule).toBe('workspace.protected');
    expect((await refusal(ws.resolve('deep/bun.lock', 'write'))).rule).toBe('workspace.protected');
    expect((await refusal(ws.resolve('.env', 'write'))).rule).toBe('workspace.protected');
  });
});

describe('read policy', () => {
  test('reads are not confined to the workspace by default', async () => {
    const ws = await open();
    expect(await ws.resolve(join(outside, 'secret.txt'), 'read')).toBe(join(outside, 'secret.txt'));
    expect(await ws.resolve('file-link', 'read')).toBe(join(outside, 'secret.txt'));
    expect(await ws.resolve('.env', 'read')).toBe(join(root, '.env'));
  });

  test('read roots confine reads, through links too', async () => {
    const ws = await open({ readRoots: ['src'] });
    expect(await ws.resolve('src/a.ts', 'read')).toBe(join(root, 'src', 'a.ts'));
    const error = await refusal(ws.resolve('file-link', 'read'));
    expect(error.rule).toBe('read.roots');
    expect(error.message).toContain('src');
    expect((await refusal(ws.resolve('README.md', 'read'))).rule).toBe('read.roots');
  });

  test('read deny globs refuse matching paths', async () => {
    const ws = await open({ readDeny: ['**/*.secret', join(outside, '**')] });
    const error = await refusal(ws.resolve('config/db.secret', 'read'));
    expect(error.rule).toBe('read.deny');
    expect(error.message).toContain("'config/db.secret'");
    expect((await refusal(ws.resolve('file-link', 'read'))).rule).toBe('read.deny');
    expect(await ws.resolve('src/a.ts', 'read')).toBe(join(root, 'src', 'a.ts'));
  });

  test('secret-file globs apply anywhere when switched on', async () => {
    const ws = await open({ denySecretFiles: true });
    for (const path of ['.env', '.env.local', 'sub/.env', 'certs/server.pem', 'tls/server.key', join(outside, 'id_ed25519')]) {
      expect((await refusal(ws.resolve(path, 'read'))).rule).toBe('read.deny');
    }
    expect(await ws.resolve('src/a.ts', 'read')).toBe(join(root, 'src', 'a.ts'));
  });

  test.skipIf(process.platform !== 'linux')("a process's environment (/proc/PID/environ) is refused, --unrestricted too: conch's own holds the keys commands never see", async () => {
    // Binary detection alone does not hide it: a first variable over 8 KiB (a generated LS_COLORS) leaves no NUL in the sniff.
    const pid = process.pid;
    for (const unrestricted of [false, true]) {
      const ws = await open({ unrestricted });
      for (const path of ['/proc/self/environ', '/proc/thread-self/environ', `/proc/${pid}/environ`, `/proc/${pid}/task/${pid}/environ`, `/proc/${pid}/./environ`]) {
        const error = await refusal(ws.resolve(path, 'read'));
        expect(error.rule).toBe('read.environ');
        expect(error.message).toContain("a process's environment");
      }
    }
    const ws = await open();
    expect(await ws.resolve('/proc/self/status', 'read')).toBe(`/proc/${pid}/status`);
  });

  test('a link loop or an over-long name is a clear error naming the path as given, with no absolute path of this machine', async () => {
    await symlink('loop-a', join(root, 'loop-b'));
    await symlink('loop-b', join(root, 'loop-a'));
    const ws = await open();
    for (const mode of ['read', 'write'] as const) {
      const loop = await ws.resolve('loop-a/x', mode).catch((e) => e);
      expect(loop.message).toStartWith("'loop-a/x' cannot be resolved: too many levels of symbolic links");
      const long = await ws.resolve(`${'n'.repeat(300)}/x`, mode).catch((e) => e);
      expect(long.message).toContain('cannot be resolved: a name in it is longer than the file system allows');
      for (const error of [loop, long]) expect(error.message).not.toContain(base);
    }
  });

  test('~ means the home directory', async () => {
    const ws = await open();
    expect(ws.absolute('~/x.txt')).toBe(join(homedir(), 'x.txt'));
  });
});

describe('a workspace or writable root moved away and made again', () => {
  test('write and edit refuse every path from then on (rule workspace.moved); read still works', async () => {
    const top = join(base, 'moved-top');
    const ws = join(top, 'org', 'proj');
    const extra = join(base, 'moved-extra', 'lib');
    await mkdir(ws, { recursive: true });
    await mkdir(extra, { recursive: true });
    const workspace = await Workspace.open({ root: ws, unrestricted: false, writableRoots: [extra] });
    expect(await workspace.resolve('a.txt', 'write')).toBe(join(ws, 'a.txt'));

    await rename(join(top, 'org'), join(top, 'gone'));
    await mkdir(ws, { recursive: true });
    const error = await workspace.resolve('a.txt', 'write').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolicyError);
    expect((error as PolicyError).rule).toBe('workspace.moved');
    expect((error as Error).message).toContain('the workspace is no longer the directory it was when the run started: something moved it away and made another in its place');
    expect(await workspace.resolve('a.txt', 'read')).toBe(join(ws, 'a.txt'));

    const other = await Workspace.open({ root: ws, unrestricted: false, writableRoots: [extra] });
    expect(await other.resolve(join(extra, 'x'), 'write')).toBe(join(extra, 'x'));
    await rename(extra, `${extra}-gone`);
    await mkdir(extra);
    await expect(other.resolve('a.txt', 'write')).rejects.toThrow(`the writable root ${extra} is no longer the directory it was`);
    // --unrestricted writes wherever it is told.
    const free = await Workspace.open({ root: ws, unrestricted: true });
    await rename(ws, `${ws}-gone`);
    await mkdir(ws);
    expect(await free.resolve('a.txt', 'write')).toBe(join(ws, 'a.txt'));
  });
});
