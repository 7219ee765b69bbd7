// The executor and the bash tool against real processes. Unsandboxed (unrestricted) runs; the
// checks that refuse before anything starts are also run restricted, since they precede the sandbox.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Compile } from 'typebox/compile';
import { canUseOutputFd } from '../../src/process/merged-output.ts';
import { createBashTool } from '../../src/tools/kernel/bash.ts';
import { createExecutor, type ExecutorSettings } from '../../src/shell/exec.ts';
import { type ToolContext } from '../../src/tools/define.ts';
import type { ToolResult } from '../../src/core/content.ts';
import { PolicyError } from '../../src/core/errors.ts';
import { Workspace } from '../../src/workspace/paths.ts';
import { DEFAULT_LIMITS, type Limits } from '../../src/core/limits.ts';
import { processAlive } from '../../src/process/group.ts';
import { probeSandbox, SandboxUnavailableError, type SandboxRequest } from '../../src/sandbox/index.ts';

let base: string;
let root: string;
let tmpDir: string;
beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'conch-bash-')));
  root = join(base, 'ws');
  tmpDir = join(base, 'run-tmp');
  mkdirSync(join(root, 'sub'), { recursive: true });
  mkdirSync(tmpDir);
  writeFileSync(join(root, 'file.txt'), 'x');
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function setup(overrides: Partial<Omit<ExecutorSettings, 'limits'>> & { limits?: Partial<Limits> } = {}) {
  const unrestricted = overrides.unrestricted ?? true;
  const workspace = await Workspace.open({ root, unrestricted });
  const limits = { ...DEFAULT_LIMITS, ...overrides.limits };
  const exec = createExecutor({
    workspace,
    sandbox: { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [] },
    env: {},
    shellEnabled: true,
    tmpDir,
    ...overrides,
    unrestricted,
    limits,
  });
  const tool = createBashTool({ exec, limits });
  const ctx: ToolContext = {
    cwd: workspace.root,
    signal: new AbortController().signal,
    runSignal: new AbortController().signal,
    workspace,
    exec: (command, options) => exec(command, { signal: new AbortController().signal, ...options }),
    update: () => {},
    callId: 'call-1',
  };
  const bash = async (args: Record<string, unknown>, signal?: AbortSignal) =>
    (await tool.execute(args as never, signal ? { ...ctx, signal } : ctx)) as ToolResult;
  return { exec, tool, bash, ctx };
}

const text = (r: ToolResult) => (r.content[0] as { text: string }).text;
const denial = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PolicyError);
  return error as PolicyError;
};

describe('bash tool results', () => {
  test('output followed by the exit status; a non-zero exit is a normal result', async () => {
    const { bash } = await setup();
    const ok = await bash({ command: 'echo hello' });
    expect(text(ok)).toBe('hello\n[exit code 0]');
    expect(ok.isError).toBe(false);
    const failed = await bash({ command: 'echo oops >&2; exit 3' });
    expect(text(failed)).toBe('oops\n[exit code 3]');
    expect(failed.isError).toBe(false);
    expect(failed.details).toMatchObject({ exitCode: 3, signal: null, timedOut: false, logPath: null });
  });

  test('signals: the leader killed by name, a child killed as 128+n', async () => {
    const { bash } = await setup();
    const leader = await bash({ command: 'kill -KILL $$' });
    expect(text(leader)).toBe('(no output)\n[killed by signal SIGKILL]');
    const child = await bash({ command: `sh -c 'kill -TERM $$'` });
    expect(text(child)).toContain('[exit code 143 (128+15: a process was killed by SIGTERM)]');
  });

  test('a timeout is clamped to the maximum, kills the tree and is an error result', async () => {
    const { bash } = await setup({ limits: { tool_timeout_max_ms: 300 } });
    const r = await bash({ command: `sh -c 'sleep 1000 & echo $!; wait'`, timeout_ms: 600_000 });
    expect(r.isError).toBe(true);
    expect(text(r)).toContain('[timed out after 300 ms; the command and its processes were killed]');
    expect(processAlive(Number(text(r).split('\n')[0]))).toBe(false);
  });

  test('cancellation through the tool signal kills the group', async () => {
    const { bash } = await setup();
    const controller = new AbortController();
    const pending = bash({ command: `sh -c 'sleep 1000 & echo $! > pid; wait'` }, controller.signal);
    const pidFile = join(root, 'pid');
    while (!(await Bun.file(pidFile).exists()) || (await Bun.file(pidFile).text()) === '') await Bun.sleep(10);
    controller.abort();
    const r = await pending;
    expect(r.isError).toBe(true);
    expect(text(r)).toContain('[cancelled;');
    expect(processAlive(Number(await Bun.file(pidFile).text()))).toBe(false);
    rmSync(pidFile);
  });

  test('live output reaches ctx.update while the command runs, in whole lines', async () => {
    const { tool, ctx } = await setup();
    const updates: { at: number; text: string }[] = [];
    let finished = 0;
    const run = (tool.execute({ command: 'echo first; sleep 0.6; echo second; sleep 0.6' } as never, {
      ...ctx,
      update: (text: string) => updates.push({ at: updates.length, text }),
    }) as Promise<ToolResult>).then((r) => {
      finished = updates.length;
      return r;
    });
    await run;
    expect(updates.length).toBeGreaterThan(0);
    expect(updates[0]!.text).toBe('first\n');
    expect(updates.every((u) => u.text.endsWith('\n'))).toBe(true);
    expect(finished).toBe(updates.length); // nothing arrives after the result
  });

  test('`sleep 1000 &` returns and leaves no process behind', async () => {
    const { bash } = await setup();
    const r = await bash({ command: 'sleep 1000 & echo $!' });
    expect(r.isError).toBe(false);
    expect(processAlive(Number(text(r).split('\n')[0]))).toBe(false);
  });

  test('truncated output names the full log, which lives beside the run temp dir, out of the sandbox', async () => {
    const { bash } = await setup({ limits: { shell_output_bytes: 1000 } });
    const r = await bash({ command: 'seq 1 10000' });
    const logPath = r.details!.logPath as string;
    expect(logPath.startsWith(`${tmpDir}-logs/`)).toBe(true);
    expect(text(r)).toContain(`output truncated: 48894 bytes total, full output in ${logPath}`);
    expect(await Bun.file(logPath).text()).toBe(Array.from({ length: 10000 }, (_, i) => `${i + 1}\n`).join(''));
  });

  test('the kept log stops at shell_log_bytes; the command runs on and the result says where the log was cut', async () => {
    const { bash } = await setup({ limits: { shell_output_bytes: 1000, shell_log_bytes: 5000 } });
    const r = await bash({ command: 'seq 1 100000; echo finished-after-the-cut' });
    const logPath = r.details!.logPath as string;
    const log = readFileSync(logPath, 'utf8');
    expect(log.length).toBe(5000);
    expect(log).toBe(Array.from({ length: 100000 }, (_, i) => `${i + 1}\n`).join('').slice(0, 5000));
    // What the model sees is as before (head, elided middle, tail to the end), plus where the log was cut.
    expect(text(r)).toContain('finished-after-the-cut\n');
    expect(text(r)).toContain('[exit code 0; output truncated: 588918 bytes total, the first 5000 bytes in ');
    expect(text(r)).toContain('(the log was cut at 5000 bytes: limit shell_log_bytes)');
    expect(r.details!.logCutAt).toBe(5000);
  });

  test('a log within shell_log_bytes is whole and says nothing of a cut', async () => {
    const { bash } = await setup({ limits: { shell_output_bytes: 1000, shell_log_bytes: 48894 } });
    const r = await bash({ command: 'seq 1 10000' });
    expect(readFileSync(r.details!.logPath as string, 'utf8').length).toBe(48894);
    expect(text(r)).not.toContain('shell_log_bytes');
    expect(r.details!.logCutAt).toBeUndefined();
  });

  test('a setsid escape becomes a tool_cleanup error with details', async () => {
    const { bash } = await setup();
    const r = await bash({ command: 'setsid sleep 1000 & sleep 0.2' });
    expect(r.isError).toBe(true);
    expect(text(r)).toContain('tool_cleanup: ');
    expect(r.details!.cleanupError).toMatch(/left the process group/);
  });

  test('the schema is closed and typed', async () => {
    const { tool } = await setup();
    const check = Compile(tool.parameters as never);
    expect(check.Check({ command: 'ls', cwd: 'sub', timeout_ms: 10 })).toBe(true);
    expect(check.Check({ command: 'ls', shell: 'bash' })).toBe(false);
    expect(check.Check({ command: 'ls', timeout_ms: 1.5 })).toBe(false);
    expect(check.Check({})).toBe(false);
    expect(tool.source).toBe('kernel');
  });
});

describe('cwd', () => {
  test('workspace-relative cwd', async () => {
    const { bash } = await setup();
    expect(text(await bash({ command: 'pwd', cwd: 'sub' }))).toBe(`${join(root, 'sub')}\n[exit code 0]`);
  });

  test('outside the workspace is refused before anything runs (restricted)', async () => {
    const { bash } = await setup({ unrestricted: false });
    for (const cwd of ['..', base, 'sub/../..']) {
      const error = await denial(bash({ command: 'touch escaped', cwd }));
      expect(error.rule).toBe('workspace.outside');
      expect(error.message).toContain('--unrestricted');
    }
    expect(await Bun.file(join(base, 'escaped')).exists()).toBe(false);
  });

  test('a symlink pointing outside does not make an outside cwd acceptable', async () => {
    const { bash } = await setup({ unrestricted: false });
    const link = join(root, 'out-link');
    await Bun.$`ln -sfn ${base} ${link}`.quiet();
    const error = await denial(bash({ command: 'true', cwd: 'out-link' }));
    expect(error.rule).toBe('workspace.outside');
    rmSync(link);
  });

  test('a missing or non-directory cwd is an error result naming it', async () => {
    const { bash } = await setup();
    const missing = await bash({ command: 'true', cwd: 'nope' });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toContain('cwd "nope" does not exist');
    const file = await bash({ command: 'true', cwd: 'file.txt' });
    expect(text(file)).toContain('cwd "file.txt" is not a directory');
  });

  test('a command with a NUL byte is an error result saying so, restricted or not (no internal argv in it)', async () => {
    for (const unrestricted of [true, false]) {
      const { bash } = await setup({ unrestricted });
      const result = await bash({ command: 'echo a\u0000b' });
      expect(result.isError).toBe(true);
      expect(text(result)).toContain('the command contains a NUL byte');
      expect(text(result)).not.toContain('args[');
    }
  });
});

describe('refusals', () => {
  test('no shell: every command refused with capability.no-shell', async () => {
    const { bash, exec } = await setup({ shellEnabled: false, unrestricted: false });
    expect((await denial(bash({ command: 'true' }))).rule).toBe('capability.no-shell');
    const result = await exec('true', { signal: new AbortController().signal });
    expect(result.denied?.rule).toBe('capability.no-shell');
    expect(result.exitCode).toBeNull();
  });

  test('the guard sees the command and canonical cwd; a denial carries its rule', async () => {
    const seen: [string, string][] = [];
    const { bash } = await setup({
      unrestricted: false,
      guard: async (command, cwd) => {
        seen.push([command, cwd]);
        return { allowed: false, rule: 'docs.no-rm', message: 'rm is not allowed here' };
      },
    });
    const error = await denial(bash({ command: 'rm -rf sub', cwd: 'sub' }));
    expect(error.rule).toBe('docs.no-rm');
    expect(error.message).toBe('rm is not allowed here');
    expect(seen).toEqual([['rm -rf sub', join(root, 'sub')]]);
  });

  test('an allowing guard lets the command run', async () => {
    const { bash } = await setup({ guard: async () => ({ allowed: true }) });
    expect(text(await bash({ command: 'echo fine' }))).toBe('fine\n[exit code 0]');
  });
});

describe('restricted mode', () => {
  test('no usable sandbox: refused with sandbox.unavailable, nothing runs', async () => {
    const marker = join(root, 'ran');
    const { bash } = await setup({
      unrestricted: false,
      prepare: async () => {
        throw new SandboxUnavailableError({
          ok: false,
          backend: 'bwrap',
          detail: 'bwrap is not installed.',
          fix: 'Install bubblewrap or pass --unrestricted.',
        });
      },
    });
    const error = await denial(bash({ command: `touch ${marker}` }));
    expect(error.rule).toBe('sandbox.unavailable');
    expect(error.message).toBe('bwrap is not installed. Install bubblewrap or pass --unrestricted.');
    expect(await Bun.file(marker).exists()).toBe(false);
  });

  test('the prepared argv and fds are what runs, and release follows every run', async () => {
    const requests: SandboxRequest[] = [];
    let released = 0;
    const program = join(base, 'fd3.txt');
    writeFileSync(program, 'handed over\n');
    const fd = openSync(program, 'r');
    try {
      const { bash } = await setup({
        unrestricted: false,
        sandbox: { profile: 'read-only', network: false, writableRoots: [], protectedGlobs: ['secret/**'] },
        prepare: async (request) => {
          requests.push(request);
          // A stand-in wrapper: marks its output so the test can tell the prepared argv ran.
          return {
            argv: ['/bin/sh', '-c', `echo wrapped; cat <&3; ${request.command}`],
            extraFds: [fd],
            release: async () => void released++,
          };
        },
      });
      expect(text(await bash({ command: 'exit 4', cwd: 'sub' }))).toBe('wrapped\nhanded over\n[exit code 4]');
      expect((await bash({ command: 'sleep 5', timeout_ms: 100 })).isError).toBe(true);
      expect(released).toBe(2);
      expect(requests[0]).toEqual({
        profile: 'read-only',
        network: false,
        writableRoots: [],
        protectedGlobs: ['secret/**'],
        command: 'exit 4',
        cwd: join(root, 'sub'),
        workspace: root,
        tmpDir,
        // Where pipe2 is at hand the command is asked to take its output as an fd of its own.
        outputOnFd: canUseOutputFd(),
      });
    } finally {
      closeSync(fd);
    }
  });

  test('a failing release is a cleanup failure, not silence', async () => {
    const { bash } = await setup({
      unrestricted: false,
      prepare: async (request) => ({
        argv: ['/bin/sh', '-c', request.command],
        extraFds: [],
        release: async () => {
          throw new Error('placeholder .env.local could not be removed');
        },
      }),
    });
    const r = await bash({ command: 'true' });
    expect(r.isError).toBe(true);
    expect(r.details!.cleanupError).toContain('placeholder .env.local could not be removed');
  });
});

describe('through the real sandbox', () => {
  // Processes on the host whose command line is exactly argv (a sandboxed pid means nothing here).
  const running = (argv: string[]) =>
    readdirSync('/proc').filter((pid) => {
      if (!/^\d+$/.test(pid)) return false;
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === argv.join('\0') + '\0' && processAlive(Number(pid));
      } catch {
        return false;
      }
    });

  test('exit status, clean env and background teardown under the sandbox', async () => {
    const status = await probeSandbox();
    if (!status.ok) {
      console.warn(`SKIPPED (loudly): no usable sandbox here (${status.detail}); the sandbox tests cover the refusal`);
      return;
    }
    const saved = process.env.ANTHROPIC_API_KEY;
    process.env.ANTHROPIC_API_KEY = 'sk-ant-from-parent';
    try {
      const { bash } = await setup({ unrestricted: false, env: { CONCH_TASK_MODE: 'sandboxed' } });
      expect(text(await bash({ command: 'echo hi; exit 42', cwd: 'sub' }))).toBe('hi\n[exit code 42]');
      const env = text(await bash({ command: 'env' }));
      expect(env).not.toContain('ANTHROPIC_API_KEY');
      expect(env).toContain('CONCH_TASK_MODE=sandboxed\n');
      const sleeper = ['sleep', '987654'];
      const r = await bash({ command: `${sleeper.join(' ')} & echo started` });
      expect(text(r)).toBe('started\n[exit code 0]');
      if (process.platform === 'linux') expect(running(sleeper)).toEqual([]);

      // A setting the sandbox cannot honour: nothing runs, the message names the setting.
      const gone = join(base, 'no-such-root');
      const misconfigured = await setup({
        unrestricted: false,
        sandbox: { profile: 'workspace-write', network: true, writableRoots: [gone], protectedGlobs: [] },
      });
      const refused = await misconfigured.bash({ command: 'echo should-not-run' });
      expect(refused.isError).toBe(true);
      expect(text(refused)).toContain(`The command could not run: writable root ${gone} does not exist`);
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});

describe('environment', () => {
  test('provider keys in the parent never reach the command; CONCH_TASK_ extras and TMPDIR do', async () => {
    const saved = { a: process.env.ANTHROPIC_API_KEY, o: process.env.OPENAI_API_KEY };
    process.env.ANTHROPIC_API_KEY = 'sk-ant-from-parent';
    process.env.OPENAI_API_KEY = 'sk-openai-from-parent';
    try {
      const { bash } = await setup({ env: { CONCH_TASK_TICKET: 'ABC-1' } });
      const out = text(await bash({ command: 'env' }));
      expect(out).not.toContain('ANTHROPIC_API_KEY');
      expect(out).not.toContain('sk-ant-from-parent');
      expect(out).not.toContain('OPENAI_API_KEY');
      expect(out).toContain('CONCH_TASK_TICKET=ABC-1\n');
      expect(out).toContain(`TMPDIR=${tmpDir}\n`);
      expect(out).toContain('TERM=dumb\n');
    } finally {
      for (const [key, value] of [['ANTHROPIC_API_KEY', saved.a], ['OPENAI_API_KEY', saved.o]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});
