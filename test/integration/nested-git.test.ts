// A sandboxed command that makes a nested repository (`git init sub`, `mkdir -p sub/.git`) whose
// config or hooks the user's own git would run unsandboxed (a git-aware prompt runs `git status`):
// after the run conch renames what would run and says so; plain repositories and the user's own,
// as they were before the run, stay as they are. Through the real CLI, real bwrap and host git.
import { describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';
import { canRun } from '../sandbox/harness.ts';

const GIT = ['/usr/bin/git', Bun.which('git')].find((p): p is string => !!p && existsSync(p)) ?? null;
const harness = useHarness();
const run = (args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });

/** Host git as the user's prompt runs it: no user or system config. */
function hostGit(cwd: string, ...args: string[]) {
  return Bun.spawnSync([GIT!, ...args], { cwd, env: { PATH: '/usr/bin:/bin', HOME: harness.dirs.home, GIT_CONFIG_NOSYSTEM: '1' }, stdout: 'pipe', stderr: 'pipe' });
}

describe.skipIf(!canRun || !GIT)('nested repositories made by sandboxed commands', () => {
  test('core.fsmonitor, a post-index-change hook and a .git file are disabled after the run; a plain git init and the user own repository are not', async () => {
    const ws = harness.dirs.workspace;
    const fired = join(harness.dirs.home, 'FIRED');
    // The user's own nested repository, hooksPath and all, from before the run.
    mkdirSync(join(ws, 'mine'));
    hostGit(join(ws, 'mine'), 'init', '-q');
    hostGit(join(ws, 'mine'), 'config', 'core.hooksPath', '.husky');
    const mine = readFileSync(join(ws, 'mine/.git/config'), 'utf8');
    const command = [
      `git init -q evil && git -C evil config core.fsmonitor "touch ${fired}-fsmonitor; false"`,
      'git init -q hooked',
      `printf '#!/bin/sh\\ntouch ${fired}-hook\\n' > hooked/.git/hooks/post-index-change && chmod +x hooked/.git/hooks/post-index-change`,
      'git init -q plain',
      "mkdir linked && printf 'gitdir: /var/tmp/elsewhere\\n' > linked/.git",
      'echo made',
    ].join('; ');
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain('made');

    expect(existsSync(join(ws, 'evil/.git/config'))).toBe(false);
    expect(readFileSync(join(ws, 'evil/.git/config.conch-disabled'), 'utf8')).toContain('fsmonitor');
    expect(existsSync(join(ws, 'hooked/.git/hooks'))).toBe(false);
    expect(existsSync(join(ws, 'hooked/.git/hooks.conch-disabled/post-index-change'))).toBe(true);
    expect(existsSync(join(ws, 'linked/.git'))).toBe(false);
    expect(existsSync(join(ws, 'linked/.git.conch-disabled'))).toBe(true);
    expect(existsSync(join(ws, 'plain/.git/config'))).toBe(true);
    expect(readFileSync(join(ws, 'mine/.git/config'), 'utf8')).toBe(mine);
    for (const line of ['evil/.git/config (it sets core.fsmonitor)', 'hooked/.git/hooks (it holds post-index-change)', 'linked/.git (a .git file or link']) {
      expect(r.stderr).toContain(line);
    }
    expect(r.stderr).not.toContain('plain/');
    expect(r.stderr).not.toContain('mine/');

    // The user's prompt looks at them: nothing of the command runs.
    for (const dir of ['evil', 'hooked', 'plain']) hostGit(join(ws, dir), 'status');
    expect(existsSync(`${fired}-fsmonitor`)).toBe(false);
  });

  test("a repository in the sandbox's toolchain cache (kept across runs, not walked) that a link in the workspace leads to is disabled", async () => {
    const ws = harness.dirs.workspace;
    const fired = join(harness.dirs.home, 'FIRED');
    const command =
      `d=$(dirname "$npm_config_cache")/evil && git init -q $d && git -C $d config core.fsmonitor "touch ${fired}; false" && ` +
      'ln -s $d docs && mkdir -p $d/sub && ln -s $d/sub deeper && echo made';
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1))).toContain('made');
    expect(r.stderr).toMatch(/evil\/\.git\/config \(it sets core\.fsmonitor\)/);
    // The user's prompt enters the link: git runs in the cache's repository, and nothing of it runs.
    for (const dir of ['docs', 'deeper']) hostGit(join(ws, dir), 'status');
    expect(existsSync(fired)).toBe(false);
  });

  test('the write tool cannot reach a nested .git at any depth, nor make a bare repository', async () => {
    mkdirSync(join(harness.dirs.workspace, 'sub'));
    harness.server.script([
      { toolCalls: [{ name: 'write', arguments: { path: 'sub/.git/config', content: '[core]\n\tfsmonitor = touch x\n' } }] },
      { toolCalls: [{ name: 'write', arguments: { path: 'a/b/.git', content: 'gitdir: /elsewhere\n' } }] },
      // No command runs in this run, so no after-run check would see it: the write itself is refused.
      { toolCalls: [{ name: 'write', arguments: { path: 'bare/config', content: '[core]\n\tpager = touch x; cat\n' } }] },
      { toolCalls: [{ name: 'write', arguments: { path: 'bare/objects/.keep', content: '' } }] },
      { toolCalls: [{ name: 'write', arguments: { path: 'bare/refs/.keep', content: '' } }] },
      { toolCalls: [{ name: 'write', arguments: { path: 'bare/HEAD', content: 'ref: refs/heads/main\n' } }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    for (const i of [1, 2, 6]) expect(JSON.stringify(harness.server.requests[i]!.body.messages.at(-1).content)).toContain('is protected');
    expect(existsSync(join(harness.dirs.workspace, 'sub/.git'))).toBe(false);
    expect(existsSync(join(harness.dirs.workspace, 'a/b/.git'))).toBe(false);
    expect(existsSync(join(harness.dirs.workspace, 'bare/HEAD'))).toBe(false);
  });

  test('conch started in a bare repository: write and bash change nothing of it, and the model is told why', async () => {
    const ws = harness.dirs.workspace;
    const fired = join(harness.dirs.home, 'FIRED');
    expect(hostGit(ws, 'init', '-q', '--bare', '.').exitCode).toBe(0);
    const config = readFileSync(join(ws, 'config'), 'utf8');
    harness.server.script([
      { toolCalls: [{ name: 'write', arguments: { path: 'hooks/post-checkout', content: `#!/bin/sh\ntouch ${fired}\n` } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: `git config -f config core.fsmonitor "touch ${fired}; false"` } }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const result = (i: number) => JSON.stringify(harness.server.requests[i]!.body.messages.at(-1).content);
    expect(result(1)).toContain('the workspace is itself a git dir');
    expect(result(2)).toContain('Read-only file system');
    expect(result(2)).toContain('the workspace is itself a git dir');
    expect(existsSync(join(ws, 'hooks/post-checkout'))).toBe(false);
    expect(readFileSync(join(ws, 'config'), 'utf8')).toBe(config);
    hostGit(ws, 'status');
    expect(existsSync(fired)).toBe(false);
  });
});

describe.skipIf(!canRun)('nested repositories: a config that is no plain file', () => {
  test('a FIFO or a link to /dev/zero as a nested config neither hangs nor fills conch at the end of the run; each is disabled', async () => {
    const ws = harness.dirs.workspace;
    const command = [
      'mkdir -p fifo/.git && mkfifo fifo/.git/config',
      'mkdir -p zero/.git && ln -s /dev/zero zero/.git/config',
      'echo made',
    ].join('; ');
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'done' }]);
    // Before the fix conch blocked for good opening the FIFO (deaf to SIGTERM), or read /dev/zero
    // until memory ran out: killed here after a generous bound, so the test fails instead of hanging.
    let killed = false;
    const r = await runConch({
      dirs: harness.dirs,
      args: ['--model', 'anthropic/test-model', 'go'],
      env: anthropicEnv(harness.server.anthropicBaseUrl),
      onSpawn: (child) => {
        const timer = setTimeout(() => ((killed = true), child.kill('SIGKILL')), 60_000);
        void child.exited.then(() => clearTimeout(timer));
      },
    });
    expect(killed).toBe(false);
    expect(r.code).toBe(0);
    for (const name of ['fifo', 'zero']) {
      expect(existsSync(join(ws, name, '.git/config'))).toBe(false);
      expect(existsSync(join(ws, name, '.git/config.conch-disabled'))).toBe(true);
    }
    expect(r.stderr).toContain('fifo/.git/config');
  }, 90_000);
});
