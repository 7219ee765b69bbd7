// Fail closed: without a working sandbox, or with a request it cannot hold, nothing runs.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../../src/process/spawn.ts';
import { prepareSandboxed, probeSandbox, SandboxRequestError } from '../../src/sandbox/index.ts';
import { canRun, fixture, sandboxed, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

const ROOT = join(import.meta.dir, '..', '..');

/** Run a snippet in a fresh bun process (its own probe cache), from `cwd`, with the given PATH. */
async function bunSnippet(source: string, cwd: string, PATH: string) {
  const child = Bun.spawn([process.execPath, '-e', source], {
    cwd,
    env: { PATH, HOME: process.env.HOME ?? '/' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, code };
}

describe('bwrap missing', () => {
  test('the probe says it is not installed, how to install it, and names --unrestricted', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'conch-nopath-'));
    try {
      const status = await probeSandbox({ PATH: empty });
      expect(status.ok).toBe(false);
      expect(status.backend).toBe('bwrap');
      expect(status.detail).toContain('not installed');
      expect(status.fix).toContain('apt-get install bubblewrap');
      expect(status.fix).toContain('dnf install bubblewrap');
      expect(status.fix).toContain('pacman -S bubblewrap');
      expect(status.fix).toContain('--unrestricted');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  test('`conch sandbox run` with bwrap missing from PATH refuses and runs nothing', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'conch-nopath-'));
    try {
      const marker = join(fx.ws, 'ran');
      const result = await bunSnippet(
        `import { sandboxRun } from ${JSON.stringify(join(ROOT, 'src/cli/sandbox-command.ts'))};
         process.exitCode = await sandboxRun(['/bin/sh', '-c', 'touch ${marker}'], { network: true, profile: 'workspace-write', cwd: process.cwd() });`,
        fx.ws,
        empty,
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('command not run');
      expect(result.stderr).toContain('not installed');
      expect(result.stderr).toContain('--unrestricted');
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!canRun)('requests that cannot be sandboxed are refused', () => {
  test('a nonexistent workspace', async () => {
    const missing = join(fx.root, 'no-such-workspace');
    const attempt = sandboxed({ ...fx, ws: missing }, `touch ${fx.tmp}/ran`);
    await expect(attempt).rejects.toBeInstanceOf(SandboxRequestError);
    await expect(sandboxed({ ...fx, ws: missing }, 'true')).rejects.toThrow(`workspace ${missing} does not exist`);
    expect(existsSync(join(fx.tmp, 'ran'))).toBe(false);
    expect(existsSync(missing)).toBe(false);
  });

  test('an unknown profile', async () => {
    await expect(sandboxed(fx, 'touch ran', { profile: 'wide-open' as never })).rejects.toThrow(
      /unknown sandbox profile "wide-open".*available: read-only, workspace-write/,
    );
    expect(existsSync(join(fx.ws, 'ran'))).toBe(false);
  });

  test('a relative or missing writable root', async () => {
    await expect(sandboxed(fx, 'true', { writableRoots: ['relative/dir'] })).rejects.toThrow(/must be an absolute path/);
    await expect(sandboxed(fx, 'true', { writableRoots: [join(fx.root, 'nope')] })).rejects.toThrow(/does not exist/);
  });

  test('a protected glob that leaves the workspace', async () => {
    await expect(sandboxed(fx, 'true', { protectedGlobs: ['../elsewhere'] })).rejects.toThrow(/must be workspace-relative/);
  });
});

describe.skipIf(!canRun)('probe and the production spawn path', () => {
  test('the probe is a real run and is cached per process', async () => {
    const first = await probeSandbox();
    const second = await probeSandbox();
    expect(first.ok).toBe(true);
    expect(second).toBe(first);
    expect(first.detail).toContain('capabilities dropped');
  });

  test('runProcess hands the seccomp descriptor through as fd 3', async () => {
    const prepared = await prepareSandboxed({
      profile: 'workspace-write',
      network: true,
      writableRoots: [],
      protectedGlobs: [],
      command: 'grep ^Seccomp: /proc/self/status; echo evil > .git/config',
      cwd: fx.ws,
      workspace: fx.ws,
      tmpDir: fx.tmp,
    });
    try {
      const result = await runProcess({
        argv: prepared.argv,
        extraFds: prepared.extraFds,
        cwd: fx.ws,
        env: { PATH: '/usr/bin:/bin' },
        timeoutMs: 20_000,
        maxShownBytes: 10_000,
        logDir: join(fx.tmp, 'logs'),
      });
      expect(result.output).toContain('Seccomp:\t2');
      expect(result.output).toContain('Read-only file system');
      expect(result.exitCode).not.toBe(0);
    } finally {
      await prepared.release();
    }
  });

  test('`conch sandbox run` runs argv with its exit status and `sandbox check` reports the backend', async () => {
    const result = await bunSnippet(
      `import { sandboxRun, sandboxCheck } from ${JSON.stringify(join(ROOT, 'src/cli/sandbox-command.ts'))};
       let text = ''; const ok = await sandboxCheck({ write: (t) => { text += t; } });
       console.log(ok, text.split('\\n')[0]);
       process.exitCode = await sandboxRun(['sh', '-c', 'echo "inside $(id -u)"; touch .git/x 2>/dev/null || echo protected; exit 7'], { network: false, profile: 'workspace-write', cwd: process.cwd() });`,
      fx.ws,
      process.env.PATH ?? '/usr/bin:/bin',
    );
    expect(result.stdout).toBe(`0 backend: bwrap\ninside ${process.getuid?.()}\nprotected\n`);
    expect(result.code).toBe(7);
    expect(existsSync(join(fx.ws, '.git', 'x'))).toBe(false);
  });

  const sandboxRunOf = (argv: string[]) =>
    bunSnippet(
      `import { sandboxRun } from ${JSON.stringify(join(ROOT, 'src/cli/sandbox-command.ts'))};
       process.exitCode = await sandboxRun(${JSON.stringify(argv)}, { network: true, profile: 'read-only', cwd: process.cwd() });`,
      fx.ws,
      // A PATH with only searchable directories: an unreadable one (root's, under su) makes sh say 126.
      '/usr/local/bin:/usr/bin:/bin',
    );

  test('`conch sandbox run` with a missing program exits 127 and says so as conch, not as its wrapper shell', async () => {
    const result = await sandboxRunOf(['no-such-program-conch', 'arg']);
    expect(result.code).toBe(127);
    expect(result.stderr).toBe('conch: no-such-program-conch: command not found\n');
    const path = await sandboxRunOf(['./no-such-file']);
    expect(path.code).toBe(127);
    expect(path.stderr).toBe('conch: ./no-such-file: no such file or directory\n');
  });

  test('`conch sandbox run` with a file that is not executable, or a directory, exits 126 and says which', async () => {
    writeFileSync(join(fx.ws, 'notes.txt'), 'echo ran > ran.txt\n', { mode: 0o644 });
    const file = await sandboxRunOf(['./notes.txt']);
    expect(file.code).toBe(126);
    expect(file.stderr).toBe('conch: ./notes.txt: permission denied (not executable)\n');
    expect(existsSync(join(fx.ws, 'ran.txt'))).toBe(false);
    const sub = await sandboxRunOf(['./']);
    expect(sub.code).toBe(126);
    expect(sub.stderr).toBe('conch: ./: is a directory\n');
  });
});
