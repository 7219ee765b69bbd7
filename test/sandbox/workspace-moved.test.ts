// The workspace (or a writable root) moved away and made again between a command's checks and
// bwrap's mounts, by another command of the run running in a sandbox of its own (a writable root
// above it lets one): bwrap then mounted the new folder, with the protections, and the real .git lay
// writable where it went. The interleaving is made exact, not waited for: the command is prepared
// (every check done), the other one runs whole, then the first is spawned, as the executor would.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { parseAllowList } from '../../src/sandbox/net-rules.ts';
import { startProxy, type NetworkProxy } from '../../src/sandbox/proxy.ts';
import { PlaceholderScope, prepareSandboxed, type SandboxRequest } from '../../src/sandbox/index.ts';
import { cleanEnv } from '../../src/process/spawn.ts';
import { createExecutor } from '../../src/shell/exec.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { canRun, fixture, sandboxed, type Fixture } from './harness.ts';

let fx: Fixture;
let scope: PlaceholderScope;
let proxy: NetworkProxy | null = null;
beforeEach(() => {
  fx = fixture();
  scope = new PlaceholderScope();
});
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  scope.close();
  fx.cleanup();
});

/**
 * A shell line that moves `dir` (with the folder above it, `above`) to `gone` and makes a folder at
 * its path again holding every name the moved one has (what bwrap mounts from there must exist).
 */
function moveAndMakeAgain(above: string, gone: string, dir: string, moved: string): string {
  return (
    `mkdir -p ${join(gone, '..')} && mv ${above} ${gone} && mkdir -p ${dir} && ` +
    `for n in $(ls -A ${moved}); do if [ -d ${moved}/$n ]; then mkdir ${dir}/$n; else : > ${dir}/$n; fi; done && echo MOVED`
  );
}

/** The spawn of a prepared command, as the executor's runProcess gives it its fds. */
async function spawnPrepared(prepared: Awaited<ReturnType<typeof prepareSandboxed>>, cwd: string) {
  const child = Bun.spawn(prepared.argv, {
    cwd,
    env: cleanEnv(process.env, {}, { tmpDir: fx.tmp }),
    stdio: ['ignore', 'pipe', 'pipe', ...prepared.extraFds],
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

/** A workspace two folders below a writable root, a repository with a hook folder. */
function nestedWorkspace() {
  const top = join(fx.root, 'src');
  const ws = join(top, 'org', 'proj');
  mkdirSync(join(ws, '.git', 'hooks'), { recursive: true });
  writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  const gone = join(top, 'node_modules', 'org');
  const request: Omit<SandboxRequest, 'command'> = {
    profile: 'workspace-write',
    network: true,
    writableRoots: [top],
    protectedGlobs: [],
    cwd: ws,
    workspace: ws,
    tmpDir: fx.tmp,
    placeholders: scope,
  };
  return { top, ws, gone, hook: join(gone, 'proj', '.git', 'hooks', 'pre-commit'), request };
}

describe.skipIf(!canRun)('a workspace or writable root moved between the checks and the mounts', () => {
  test('a workspace moved away and made again after the checks runs nothing: its .git stays as it was', async () => {
    const { top, ws, gone, hook, request } = nestedWorkspace();
    const prepared = await prepareSandboxed({ ...request, command: `echo evil > ${hook}; echo RAN` });
    try {
      const other = await sandboxed(fx, moveAndMakeAgain(join(top, 'org'), gone, ws, join(gone, 'proj')), request);
      expect(other.stdout).toBe('MOVED\n');
      const result = await spawnPrepared(prepared, fx.root);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^conch: the workspace .*org\/proj is no longer the directory it was at this session's first command \(workspace\.moved\); nothing was run/);
      expect(existsSync(hook)).toBe(false);
    } finally {
      await prepared.release();
    }
  });

  test('a writable root moved away and made again after the checks runs nothing', async () => {
    const root = join(fx.ws, 'vendor', 'lib');
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    const gone = join(fx.ws, 'node_modules', 'vendor');
    const hook = join(gone, 'lib', '.git', 'hooks', 'pre-commit');
    const request = { writableRoots: [root], placeholders: scope };
    const prepared = await prepareSandboxed({
      profile: 'workspace-write', network: true, protectedGlobs: [], cwd: fx.ws, workspace: fx.ws, tmpDir: fx.tmp, ...request,
      command: `echo evil > ${hook}; echo RAN`,
    });
    try {
      expect((await sandboxed(fx, moveAndMakeAgain(join(fx.ws, 'vendor'), gone, root, join(gone, 'lib')), request)).stdout).toBe('MOVED\n');
      const result = await spawnPrepared(prepared, fx.ws);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^conch: the writable root .*vendor\/lib is no longer the directory it was/);
      expect(existsSync(hook)).toBe(false);
    } finally {
      await prepared.release();
    }
  });

  // bwrap mounts the protections after the workspace, each by path: moved away between the two and
  // put back before the check, the workspace is itself again but a protection went to the folder
  // made in its place. Made exact here by leaving that protection's mount out of the argv.
  test('a protection not in force when the command would start (gone to a folder since moved away) runs nothing', async () => {
    const { ws, request } = nestedWorkspace();
    const git = join(ws, '.git');
    const prepared = await prepareSandboxed({ ...request, command: `echo evil > ${git}/hooks/pre-commit; echo RAN` });
    try {
      const at = prepared.argv.findIndex((arg, i) => arg === '--ro-bind' && prepared.argv[i + 1] === git && prepared.argv[i + 2] === git);
      expect(at).toBeGreaterThan(0);
      const result = await spawnPrepared({ ...prepared, argv: prepared.argv.toSpliced(at, 3) }, fx.root);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^conch: the workspace .*org\/proj is no longer the directory it was/);
      expect(existsSync(join(git, 'hooks', 'pre-commit'))).toBe(false);
    } finally {
      await prepared.release();
    }
  });

  // A placeholder file is the user's own, 0444: without its mount a command cannot write it but can
  // remove it and make another in its place (a pre-commit hook held by name at a core.hooksPath `.`
  // top, an .env file), and `-w` says nothing either way for a user other than root. It must be a
  // mount point.
  test('a placeholder file whose mount is not in force runs nothing: no file is made in its place', async () => {
    const { ws, request } = nestedWorkspace();
    const held = join(ws, 'pre-commit');
    const prepared = await prepareSandboxed({ ...request, protectedGlobs: ['pre-commit'], command: 'rm -f pre-commit && echo evil > pre-commit; echo RAN' });
    try {
      const at = prepared.argv.findIndex((arg, i) => arg === '--ro-bind' && prepared.argv[i + 1] === held && prepared.argv[i + 2] === held);
      expect(at).toBeGreaterThan(0);
      const result = await spawnPrepared({ ...prepared, argv: prepared.argv.toSpliced(at, 3) }, fx.root);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^conch: the workspace .*org\/proj is no longer the directory it was/);
    } finally {
      await prepared.release();
    }
    // The placeholder itself (the run's scope keeps it until the run ends), empty: nothing written there.
    expect(existsSync(held) ? readFileSync(held, 'utf8') : '').toBe('');
  });

  test('a protected path whose name holds a space or a backslash is found in the mount table: its command runs', async () => {
    const { ws, request } = nestedWorkspace();
    // Escaped in the globs as the config's paths are (a backslash escapes the next character).
    const result = await sandboxed(fx, 'ls -A', { ...request, protectedGlobs: ['my dir', 'back\\\\slash', 'tab\there'] });
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toEqual(expect.arrayContaining(['my dir', 'back\\slash', 'tab\there']));
    expect(existsSync(join(ws, 'back\\slash'))).toBe(true);
  });

  test("the bash tool's command is refused as workspace.moved (a policy denial), naming what to do", async () => {
    const { top, ws, gone, hook, request } = nestedWorkspace();
    let first = true;
    const exec = createExecutor({
      workspace: await Workspace.open({ root: ws, unrestricted: false, writableRoots: [top] }),
      unrestricted: false,
      sandbox: { profile: 'workspace-write', network: false, writableRoots: [top], protectedGlobs: [] },
      limits: DEFAULT_LIMITS,
      env: {},
      shellEnabled: true,
      tmpDir: fx.tmp,
      logDir: join(fx.root, 'logs'),
      placeholders: scope,
      // The executor's own seam: its command prepared, another one of the run moves the workspace.
      prepare: async (req) => {
        const prepared = await prepareSandboxed(req);
        if (first) {
          first = false;
          expect((await sandboxed(fx, moveAndMakeAgain(join(top, 'org'), gone, ws, join(gone, 'proj')), request)).stdout).toBe('MOVED\n');
        }
        return prepared;
      },
    });
    const result = await exec(`echo evil > ${hook}; echo RAN`, { signal: new AbortController().signal });
    expect(result.denied?.rule).toBe('workspace.moved');
    expect(result.denied?.message).toMatch(/workspace .*org\/proj is no longer the directory it was at this session's first command: something moved it away.*put it back/);
    expect(result.output).toBe('');
    expect(existsSync(hook)).toBe(false);
    // The next command is refused by the host's check, before it starts: the same denial.
    const next = await exec(`echo evil > ${hook}`, { signal: new AbortController().signal });
    expect(next.denied).toEqual(result.denied!);
    expect(existsSync(hook)).toBe(false);
  });

  test('with the network allowlist (the relay in front of the command) the moved workspace is refused too', async () => {
    const { top, ws, gone, hook, request } = nestedWorkspace();
    proxy = await startProxy({ allow: parseAllowList(['127.0.0.1:9'], String), dir: mkdtempSync(join(fx.root, 'proxy-')), source: 'the test allowlist' });
    let first = true;
    const exec = createExecutor({
      workspace: await Workspace.open({ root: ws, unrestricted: false, writableRoots: [top] }),
      unrestricted: false,
      sandbox: { profile: 'workspace-write', network: true, writableRoots: [top], protectedGlobs: [], netAllow: ['127.0.0.1:9'] },
      limits: DEFAULT_LIMITS,
      env: {},
      shellEnabled: true,
      tmpDir: fx.tmp,
      logDir: join(fx.root, 'logs'),
      placeholders: scope,
      proxy,
      prepare: async (req) => {
        const prepared = await prepareSandboxed(req);
        if (first) {
          first = false;
          expect((await sandboxed(fx, moveAndMakeAgain(join(top, 'org'), gone, ws, join(gone, 'proj')), request)).stdout).toBe('MOVED\n');
        }
        return prepared;
      },
    });
    const ran = await exec('echo "$HTTP_PROXY"', { signal: new AbortController().signal });
    expect(ran.denied?.rule).toBe('workspace.moved');
    expect(existsSync(hook)).toBe(false);
  });

  test('with the allowlist, a command whose directories stayed runs, and neither it nor the relay (its parent) holds a descriptor of them', async () => {
    const { top, ws } = nestedWorkspace();
    proxy = await startProxy({ allow: parseAllowList(['127.0.0.1:9'], String), dir: mkdtempSync(join(fx.root, 'proxy-')), source: 'the test allowlist' });
    const exec = createExecutor({
      workspace: await Workspace.open({ root: ws, unrestricted: false, writableRoots: [top] }),
      unrestricted: false,
      sandbox: { profile: 'workspace-write', network: true, writableRoots: [top], protectedGlobs: [], netAllow: ['127.0.0.1:9'] },
      limits: DEFAULT_LIMITS,
      env: {},
      shellEnabled: true,
      tmpDir: fx.tmp,
      logDir: join(fx.root, 'logs'),
      placeholders: scope,
      proxy,
    });
    // The relay closes what it does not keep right after it starts the command: one may go meanwhile.
    const result = await exec('echo "$HTTP_PROXY"; for f in /proc/self/fd/* /proc/$PPID/fd/*; do readlink "$f" || :; done', { signal: new AbortController().signal });
    expect(result.exitCode).toBe(0);
    const lines = result.output.trim().split('\n');
    expect(lines[0]).toBe('http://127.0.0.1:3128');
    expect(lines).not.toContain(ws);
    expect(lines).not.toContain(top);
  });

  test('a workspace hidden whole (read.deny names it) is no directory moved: its command runs in the empty folder, as before', async () => {
    const result = await sandboxed(fx, 'ls -A; echo ran', { hidden: [fx.ws], placeholders: scope });
    expect(result).toMatchObject({ code: 0, stdout: 'ran\n' });
  });

  test('a command whose directories stayed runs, and gets no descriptor of them (one would reach past every mount)', async () => {
    const { top, ws, request } = nestedWorkspace();
    const result = await sandboxed(fx, 'for f in /proc/self/fd/*; do readlink "$f"; done; echo ok > made', request);
    expect(result.code).toBe(0);
    const links = result.stdout.trim().split('\n');
    expect(links).not.toContain(ws);
    expect(links).not.toContain(top);
    expect(readFileSync(join(ws, 'made'), 'utf8')).toBe('ok\n');
  });
});
