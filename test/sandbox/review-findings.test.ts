// Findings of a red-team review: escapes and policy bypasses the other attack tests did not cover,
// each kept as a regression test of the fix. Real bwrap, real seccomp, real files.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { createCommandGuard, findOnPath } from '../../src/policy/command-rules.ts';
import type { CommandLayer } from '../../src/config/command-layer.ts';
import { createExecutor } from '../../src/shell/exec.ts';
import { PolicyError } from '../../src/core/errors.ts';
import { fileTools } from '../support/file-tools.ts';
import { loadConfig } from '../../src/config/load.ts';
import { openSession } from '../../src/host/session.ts';
import { canRun, fixture, PYTHON, py, sandboxed, snapshot, type Fixture } from './harness.ts';

const REPO = resolve(import.meta.dir, '../..');
const GIT = ['/usr/bin/git', Bun.which('git')].find((p): p is string => !!p && existsSync(p)) ?? null;

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

function executor(opts: { network?: boolean; readDeny?: string[] } = {}) {
  return (async () => {
    const { workspace } = await fileTools(fx.ws, {}, { readDeny: opts.readDeny, denySecretFiles: true });
    return {
      workspace,
      exec: createExecutor({
        workspace,
        unrestricted: false,
        sandbox: { profile: 'workspace-write', network: opts.network ?? false, writableRoots: [], protectedGlobs: [] },
        limits: DEFAULT_LIMITS,
        env: {},
        shellEnabled: true,
        tmpDir: fx.tmp,
      }),
    };
  })();
}

describe.skipIf(!canRun)('host-side writes steered from inside the sandbox', () => {
  // src/process/output.ts BoundedOutput.spill(): mkdirSync(logDir, recursive) + openSync(logDir/output-….log, 'wx')
  // runs in conch (unsandboxed) on <tmpDir>/logs, which the command sees (and may replace) as /tmp/logs.
  test('a command that swaps /tmp/logs for a symlink cannot make conch write its output log elsewhere', async () => {
    const { exec } = await executor();
    const before = snapshot(fx.outside);
    const result = await exec(
      `rm -rf /tmp/logs; ln -s ${fx.outside} /tmp/logs; touch ${fx.outside}/direct 2>/dev/null || echo direct-write-refused; ` +
        `echo ATTACKER-CHOSEN-CONTENT; head -c 100000 /dev/zero | tr '\\0' A`,
      { signal: new AbortController().signal },
    );
    expect(result.output).toContain('direct-write-refused'); // the sandbox itself holds…
    expect(snapshot(fx.outside)).toBe(before); // …and so does conch's own log write, from outside
  });

  // The write/edit race against a concurrent command is covered by write-race.test.ts.

  // Nothing protects conch's own config dir when it lies inside the workspace (conch run in $HOME,
  // or a dotfiles checkout that ~/.config links into). A plugin dropped there runs unsandboxed on
  // the host at the next start; trusted.json there trusts any project's .conch/tools.
  test("with the workspace at $HOME a sandboxed command cannot plant a plugin in ~/.config/conch/tools", async () => {
    const child = Bun.spawn(
      [join(REPO, 'bin/conch'), 'sandbox', 'run', '--', '/bin/sh', '-c', 'mkdir -p .config/conch/tools && echo "export default [];" > .config/conch/tools/evil.ts'],
      { cwd: fx.ws, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: fx.ws, CONCH_FROM_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    await child.exited;
    expect(existsSync(join(fx.ws, '.config', 'conch', 'tools', 'evil.ts'))).toBe(false);
  }, 30_000);
});

describe.skipIf(!canRun || PYTHON === null)('Unix sockets', () => {
  // src/sandbox/seccomp.ts: socket(AF_UNIX) is refused, socketpair(AF_UNIX, SOCK_DGRAM) is not, and
  // an unbound datagram socket can sendto()/connect() any path: /dev/log, journald, sd_notify…
  for (const network of [true, false]) {
    test(`socketpair(AF_UNIX, SOCK_DGRAM) + sendto cannot reach a host datagram socket (network ${network ? 'on' : 'off'})`, async () => {
      const dir = realpathSync(mkdtempSync('/var/tmp/conch-rt-sock-'));
      const path = join(dir, 'host.sock');
      const server = Bun.spawn(
        [PYTHON!, '-c', 'import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint("ready",flush=True)\ns.settimeout(5)\ntry:\n  print("GOT",s.recv(100),flush=True)\nexcept Exception: pass', path],
        { stdout: 'pipe' },
      );
      try {
        const reader = server.stdout.getReader();
        await reader.read();
        const result = await sandboxed(
          fx,
          py(`import socket\na,b=socket.socketpair(socket.AF_UNIX,socket.SOCK_DGRAM)\na.sendto(b"from-sandbox","${path}")\nprint("SENT")`),
          { network },
        );
        server.kill();
        let heard = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          heard += new TextDecoder().decode(value);
        }
        expect(result.stdout).not.toContain('SENT');
        expect(heard).not.toContain('from-sandbox');
      } finally {
        server.kill();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

describe('command rules', () => {
  const allowGitStatus: CommandLayer = {
    source: 'user config',
    idPrefix: 'user:shell.commands',
    allow: [{ id: 'git-status', executable: '/usr/bin/git', args: ['status'], match: 'prefix' }],
    deny: [],
    ask: [],
  };
  const guard = () => createCommandGuard([allowGitStatus], { resolveExecutable: findOnPath, path: '/usr/local/bin:/usr/bin:/bin' });

  // src/policy/command-rules.ts sameProgram(): realpath(dirname) is cached per directory string for
  // the whole run, and the directory is a workspace path the model controls.
  test('a directory that was a link to /usr/bin is not still trusted after the model replaces it with its own', async () => {
    const ws = realpathSync(mkdtempSync(join(tmpdir(), 'conch-rt-guard-')));
    try {
      const g = guard();
      symlinkSync('/usr/bin', join(ws, 'd'));
      expect(await g('d/git status', ws)).toEqual({ allowed: true }); // genuinely /usr/bin/git
      rmSync(join(ws, 'd'));
      mkdirSync(join(ws, 'd'));
      writeFileSync(join(ws, 'd', 'git'), '#!/bin/sh\necho attacker\n');
      chmodSync(join(ws, 'd', 'git'), 0o755);
      expect((await g('d/git status', ws)).allowed).toBe(false);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  // CODE_LOADING_VAR only knows LD_*, DYLD_*, BASH_FUNC_*, BASH_ENV and ENV; git, node, perl, ruby,
  // python … all take code from other variables.
  for (const command of [
    `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch pwned; false' git status`,
    `GIT_CONFIG_PARAMETERS="'core.fsmonitor=touch pwned'" git status`,
    `GIT_DIR=evil/.git git status`,
  ]) {
    test(`an allow rule for "git status" does not let through: ${command}`, async () => {
      expect((await guard()(command, fx.ws)).allowed).toBe(false);
    });
  }

  test.skipIf(!canRun || GIT === null)('(context) the GIT_CONFIG_* command really runs the injected command in the sandbox', async () => {
    const repo = join(fx.ws, 'repo');
    mkdirSync(repo);
    Bun.spawnSync([GIT!, 'init', '-q'], { cwd: repo });
    const result = await sandboxed(fx, `GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch pwned; false' ${GIT} status`, { cwd: repo });
    expect(result.code).toBe(0);
    expect(existsSync(join(repo, 'pwned'))).toBe(true);
  });
});

describe.skipIf(!canRun)('read policy', () => {
  // The read tool checks every path; a sandboxed command gets the same policy through hidden mounts
  // (denied roots and matching top-level entries), wired by openSession.
  test('read.deny and denySecretFiles hold for bash as well as for the read tool', async () => {
    mkdirSync(join(fx.ws, 'keys'));
    writeFileSync(join(fx.ws, 'keys', 'server.pem'), 'PRIVATE-KEY-MATERIAL\n');
    mkdirSync(join(fx.ws, '.conch'), { recursive: true });
    writeFileSync(join(fx.ws, '.conch', 'config.json'), JSON.stringify({ read: { deny: ['keys/**'], denySecretFiles: true } }));
    const config = await loadConfig({ cwd: fx.ws, env: { HOME: fx.root, XDG_CONFIG_HOME: join(fx.root, 'xdg') }, flags: {} });
    const session = await openSession(config, { cwd: fx.ws });
    try {
      await expect(session.workspace.resolve('keys/server.pem', 'read')).rejects.toBeInstanceOf(PolicyError);
      await expect(session.workspace.resolve('.env', 'read')).rejects.toBeInstanceOf(PolicyError);
      const result = await session.executor('cat keys/server.pem .env; echo COUNT=$(ls -A keys | wc -l)', { signal: new AbortController().signal });
      expect(result.output).not.toContain('PRIVATE-KEY-MATERIAL');
      expect(result.output).not.toContain('SECRET=1');
      expect(result.output).toContain('COUNT=0');
    } finally {
      await session.dispose();
    }
  });
});

describe.skipIf(GIT === null)('git', () => {
  // The workspace is a subdirectory of a repository (a monorepo package). .git is protected only at
  // the workspace root, where there is none; HEAD, config, objects/ and refs/ make the workspace a
  // git dir of its own, and host git (the user's `git status` / `git diff` to review) obeys its config.
  test('the file tools cannot turn a repository subdirectory workspace into a git dir whose config host git runs', async () => {
    const repo = realpathSync(mkdtempSync(join(tmpdir(), 'conch-rt-repo-')));
    try {
      const git = (cwd: string, ...args: string[]) =>
        Bun.spawnSync([GIT!, ...args], { cwd, env: { PATH: '/usr/bin:/bin', HOME: repo, GIT_CONFIG_NOSYSTEM: '1' }, stdout: 'pipe', stderr: 'pipe' });
      const pkg = join(repo, 'pkg');
      mkdirSync(pkg);
      git(repo, 'init', '-q');
      const t = await fileTools(pkg);
      const marker = join(repo, 'PWNED');
      for (const [path, content] of [
        ['HEAD', 'ref: refs/heads/main\n'],
        ['objects/info/keep', ''],
        ['refs/heads/keep', ''],
        ['config', `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch ${marker}; false"\n`],
      ]) {
        const r = await t.run(t.write, { path, content }).catch((e) => {
          if (e instanceof PolicyError) return { isError: true };
          throw e;
        });
        if (r.isError) return; // refused: the hole is closed
      }
      git(pkg, 'status');
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
