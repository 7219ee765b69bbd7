// Shared fixtures for the sandbox tests: real bwrap, a temp workspace, an "outside" directory the
// command must not touch, and snapshots to prove the host is unchanged afterwards.
import { afterEach, beforeEach } from 'bun:test';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canUseOutputFd } from '../../src/process/merged-output.ts';
import { cleanEnv, runProcess, type ProcessResult, type SpawnOptions } from '../../src/process/spawn.ts';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { PlaceholderScope, prepareSandboxed, probeSandbox, type SandboxRequest } from '../../src/sandbox/index.ts';
import type { NetworkProxy } from '../../src/sandbox/proxy.ts';
import { createExecutor, type ExecResult, type Executor } from '../../src/shell/exec.ts';
import { Workspace } from '../../src/workspace/paths.ts';

export const status = await probeSandbox();
export const canRun = status.ok;
if (!canRun) {
  console.warn(`\n*** SANDBOX TESTS SKIPPED: bubblewrap cannot run here: ${status.detail} ${status.fix ?? ''} ***\n`);
}

/** python3 at a path readable by any user (root's may be a pyenv shim under /root). */
export const PYTHON = ['/usr/bin/python3', Bun.which('python3')].find((p): p is string => !!p && existsSync(p)) ?? null;
if (canRun && !PYTHON) console.warn('\n*** python3 not found: the socket, ptrace, io_uring and TIOCSTI attack tests are SKIPPED ***\n');

export const isRoot = process.getuid?.() === 0;

export interface Fixture {
  root: string;
  ws: string;
  tmp: string;
  outside: string;
  cleanup(): void;
}

/** A workspace with a .git (config, hooks), a .env, and an outside directory with a file in it. */
export function fixture(): Fixture {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-sbx-')));
  const ws = join(root, 'ws');
  const tmp = join(root, 'tmp');
  // Not under /tmp: inside the sandbox /tmp is the run's temp dir, so the host's /tmp is not even
  // visible there. /var/tmp is, read-only, which is what an "outside" directory must be.
  const outside = realpathSync(mkdtempSync('/var/tmp/conch-sbx-outside-'));
  for (const dir of [ws, tmp, join(ws, '.git', 'hooks'), join(ws, 'src')]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(ws, '.git', 'config'), '[core]\n\trepositoryformatversion = 0\n');
  writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(ws, '.env'), 'SECRET=1\n');
  writeFileSync(join(ws, 'src', 'main.txt'), 'hello\n');
  writeFileSync(join(outside, 'file'), 'outside\n');
  const cleanup = () => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  };
  return { root, ws, tmp, outside, cleanup };
}

/**
 * A fresh fixture and placeholder scope for each test of the enclosing describe (or file), closed
 * after it: read `current.fx` and `current.scope` inside a test.
 */
export function useFixtureScope(): { readonly fx: Fixture; readonly scope: PlaceholderScope } {
  const current = {} as { fx: Fixture; scope: PlaceholderScope };
  beforeEach(() => {
    current.fx = fixture();
    current.scope = new PlaceholderScope();
  });
  afterEach(() => {
    current.scope.close();
    current.fx.cleanup();
  });
  return current;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type RunOptions = Partial<Omit<SandboxRequest, 'command'>> & { stdin?: 'ignore' };

/** The request the executor makes for `command` in the fixture's workspace (network on), with `options` over it. */
function request(fx: Fixture, command: string, options: RunOptions): SandboxRequest {
  return {
    profile: 'workspace-write',
    network: true,
    writableRoots: [],
    protectedGlobs: [],
    cwd: fx.ws,
    workspace: fx.ws,
    tmpDir: fx.tmp,
    command,
    ...options,
  };
}

/** Run a shell command through prepareSandboxed exactly as the executor would, then release. */
export async function sandboxed(fx: Fixture, command: string, options: RunOptions = {}): Promise<RunResult> {
  const prepared = await prepareSandboxed(request(fx, command, options));
  try {
    const child = Bun.spawn(prepared.argv, {
      cwd: fx.ws,
      env: cleanEnv(process.env, {}, { tmpDir: fx.tmp }),
      stdio: ['ignore', 'pipe', 'pipe', ...prepared.extraFds],
    });
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    return { code, stdout, stderr };
  } finally {
    await prepared.release();
  }
}

/** Run a shell command through prepareSandboxed and runProcess, as the bash tool does, then release. */
export async function executed(fx: Fixture, command: string, options: RunOptions = {}, spawn: Partial<SpawnOptions> = {}): Promise<ProcessResult> {
  const prepared = await prepareSandboxed(request(fx, command, { outputOnFd: canUseOutputFd(), ...options }));
  try {
    return await runProcess({
      argv: prepared.argv,
      cwd: fx.ws,
      env: cleanEnv(process.env, {}, { tmpDir: fx.tmp }),
      timeoutMs: 60_000,
      maxShownBytes: 10_000,
      logDir: fx.tmp,
      extraFds: prepared.extraFds,
      ...(prepared.outputFd === undefined ? {} : { outputFd: prepared.outputFd }),
      ...(prepared.infoFd === undefined ? {} : { infoFd: prepared.infoFd }),
      ...(prepared.settle ? { settle: prepared.settle } : {}),
      ...spawn,
    });
  } finally {
    await prepared.release();
  }
}

/** The bash tool's executor over the fixture (network off), run by run: `placeholders` makes it one run's. */
export async function bashExecutor(fx: Fixture, placeholders?: PlaceholderScope, protectedGlobs: string[] = []): Promise<(command: string) => Promise<ExecResult>> {
  const exec = createExecutor({
    workspace: await Workspace.open({ root: fx.ws, unrestricted: false }),
    unrestricted: false,
    sandbox: { profile: 'workspace-write', network: false, writableRoots: [], protectedGlobs },
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir: fx.tmp,
    logDir: join(fx.root, 'logs'),
    ...(placeholders ? { placeholders } : {}),
  });
  return (command) => exec(command, { signal: new AbortController().signal });
}

/** The bash tool's executor over the fixture with the network allowlist `allow` through `proxy`. */
export async function allowlistExecutor(fx: Fixture, allow: string[], proxy: NetworkProxy): Promise<Executor> {
  return createExecutor({
    workspace: await Workspace.open({ root: fx.ws, unrestricted: false }),
    unrestricted: false,
    sandbox: { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], netAllow: allow },
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir: fx.tmp,
    logDir: join(fx.root, 'logs'),
    proxy,
  });
}

/** Python source run inside the sandbox, passed safely through sh. */
export function py(source: string): string {
  return `${PYTHON} -c '${source.replace(/'/g, `'\\''`)}'`;
}

/** Everything about a tree that an attack could change: type, mode, size, content, link target. */
export function snapshot(dir: string): string {
  const lines: string[] = [];
  const walk = (path: string, rel: string) => {
    let info;
    try {
      info = lstatSync(path);
    } catch {
      lines.push(`${rel} MISSING`);
      return;
    }
    const mode = (info.mode & 0o7777).toString(8);
    if (info.isSymbolicLink()) lines.push(`${rel} link ${readlinkSync(path)}`);
    else if (info.isDirectory()) {
      lines.push(`${rel} dir ${mode}`);
      for (const name of readdirSync(path).sort()) walk(join(path, name), `${rel}/${name}`);
    } else if (info.isFile()) lines.push(`${rel} file ${mode} ${info.size} ${info.nlink} ${readFileSync(path, 'latin1')}`);
    else lines.push(`${rel} other ${mode}`);
  };
  walk(dir, '.');
  return lines.join('\n');
}

export function snapshotAll(fx: Fixture): string {
  return `${snapshot(fx.ws)}\n--outside--\n${snapshot(fx.outside)}`;
}

export function randomName(prefix: string): string {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}
