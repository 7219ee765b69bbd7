// Piped stdin as part of the task: bounded by the stdin_bytes limit, and announced on a terminal
// when it stays open. Through the real CLI process and the local model server.
import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, CONCH, conchEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness();
const MODEL = ['--model', 'anthropic/test-model'];

/** conch behind a shell pipeline `PRODUCER | conch ARGS`. */
async function piped(producer: string, args: string[]) {
  const quoted = [CONCH, ...MODEL, ...args].map((a) => `'${a}'`).join(' ');
  const child = Bun.spawn(['sh', '-c', `${producer} | ${quoted}`], {
    cwd: harness.dirs.workspace,
    env: { ...conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)), TERM: 'dumb' },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, code };
}

describe('stdin that stays open', () => {
  test('on a terminal conch says it is reading stdin, then runs with it once stdin ends', async () => {
    harness.server.script([{ text: 'reviewed' }]);
    // The producer keeps stdin open until the test has seen the notice, then it ends.
    const pidFile = join(harness.dirs.home, 'producer.pid');
    const producer = `sh -c 'echo "the diff"; echo $$ > ${pidFile}; exec sleep 60'`;
    const quoted = [CONCH, ...MODEL, 'review this'].map((a) => `'${a}'`).join(' ');
    const child = Bun.spawn(['script', '-qec', `${producer} | ${quoted}`, '/dev/null'], {
      cwd: harness.dirs.workspace,
      env: { ...conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)), TERM: 'dumb' },
      stdin: 'ignore',
      stdout: 'pipe',
    });
    let screen = '';
    const decoder = new TextDecoder();
    const reader = child.stdout.getReader();
    while (!screen.includes('conch: reading stdin as part of the task')) {
      const { done, value } = await reader.read();
      if (done) break;
      screen += decoder.decode(value);
    }
    expect(screen).toContain('conch: reading stdin as part of the task');
    process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      screen += decoder.decode(value);
    }
    expect(await child.exited).toBe(0);
    expect(screen.replaceAll('\r', '')).toContain('reviewed\n');
    expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('the diff');
  });

  test('when stderr is not a terminal, nothing is said', async () => {
    harness.server.script([{ text: 'reviewed' }]);
    const r = await piped("{ echo 'the diff'; sleep 2; }", ['review this']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('reviewed\n');
  });
});

describe('the stdin_bytes limit', () => {
  test('a stdin that never ends stops at the default limit: limit_exceeded stdin_bytes, no model call', async () => {
    const r = await piped('yes', ['go']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('limit_exceeded');
    expect(r.stderr).toContain('stdin_bytes');
    expect(harness.server.requests).toHaveLength(0);
  });

  test('--limit stdin_bytes=N: N bytes pass, N+1 are refused, in text and in --json', async () => {
    harness.server.script(() => ({ text: 'ok' }));
    const run = (stdin: string, extra: string[] = []) =>
      runConch({ dirs: harness.dirs, args: [...MODEL, '--limit', 'stdin_bytes=1000', ...extra, 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl), stdin });
    expect((await run('x'.repeat(1000))).code).toBe(0);
    expect(harness.server.requests).toHaveLength(1);
    const over = await run('x'.repeat(1001));
    expect(over.code).toBe(4);
    expect(over.stderr).toContain('--limit stdin_bytes=');
    const json = await run('x'.repeat(1001), ['--json']);
    expect(json.code).toBe(4);
    const refused = JSON.parse(json.stdout);
    expect(refused).toMatchObject({ status: 'limit_exceeded', limit: 'stdin_bytes', exitCode: 4, partial: true, provider: null });
    expect(harness.server.requests).toHaveLength(1);
    // The same keys as a finished run's envelope (plus the limit and its message).
    const ran = JSON.parse((await run('x', ['--json'])).stdout);
    expect(Object.keys(refused).sort()).toEqual([...Object.keys(ran), 'limit', 'message'].sort());
  });

  test('stdin_bytes is a config key like every limit', async () => {
    await writeConfig(harness.dirs, { limits: { stdin_bytes: 10 } });
    const r = await runConch({ dirs: harness.dirs, args: [...MODEL, 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl), stdin: 'more than ten bytes' });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('stdin_bytes');
  });
});

describe('unreadable stdin', () => {
  test('a directory or a closed stdin adds nothing to the task: the run goes on', async () => {
    harness.server.script(() => ({ text: 'ran' }));
    for (const redirect of ['< /', '<&-']) {
      const quoted = [CONCH, ...MODEL, 'go'].map((a) => `'${a}'`).join(' ');
      const child = Bun.spawn(['sh', '-c', `exec ${quoted} ${redirect}`], {
        cwd: harness.dirs.workspace,
        env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect({ redirect, code, stdout, stderr }).toEqual({ redirect, code: 0, stdout: 'ran\n', stderr: '' });
    }
  });
});

describe('binary stdin', () => {
  test('is a setup error saying what to do instead, before any model call; text with stray bytes still runs', async () => {
    const binary = await piped("printf 'PNG\\000\\001\\002'", ['describe this']);
    expect(binary.code).toBe(2);
    expect(binary.stderr).toContain('conch: stdin is binary (6 bytes with NUL bytes)');
    expect(binary.stderr).toContain('name the file in the task');
    const several = await piped("printf 'x\\000y'", ['run', 'one', 'two']);
    expect(several.code).toBe(2);
    expect(several.stderr).toContain('conch: stdin is binary (3 bytes with NUL bytes)');
    const json = await piped("printf 'x\\000y'", ['--json', 'go']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid', exitCode: 2 });
    expect(harness.server.requests).toHaveLength(0);
    // Latin-1 in a diff is not UTF-8, but it is text: no NUL byte, so it runs.
    harness.server.script(() => ({ text: 'reviewed' }));
    const latin1 = await piped("printf 'caf\\351\\n'", ['review this']);
    expect(latin1.code).toBe(0);
    expect(latin1.stdout).toBe('reviewed\n');
  });
});

/**
 * conch with a stdin pipe the parent never closes (a program that spawns conch with the default
 * stdio: Node's spawn, Python's Popen(stdin=PIPE)). Resolves once conch exits; stdin is closed after.
 */
function withOpenStdin(args: string[]) {
  const child = Bun.spawn([CONCH, ...MODEL, ...args], {
    cwd: harness.dirs.workspace,
    env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const done = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]).then(([stdout, stderr, code]) => {
    void child.stdin.end();
    return { stdout, stderr, code };
  });
  return { child, done };
}

/** Until conch catches SIGTERM (its handler is in place, /proc SigCgt bit 15), or a few seconds. */
async function catchesSigterm(pid: number) {
  for (let i = 0; i < 100; i++) {
    const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    if (mask && (BigInt(`0x${mask}`) & (1n << 14n)) !== 0n) return;
    await Bun.sleep(50);
  }
}

describe('stdin that never ends', () => {
  test('the run deadline bounds the wait: timed_out (124) naming stdin and </dev/null, in text and in --json, no model call', async () => {
    const text = await withOpenStdin(['--timeout', '1', 'go']).done;
    expect(text.code).toBe(124);
    expect(text.stderr).toContain('timed_out');
    expect(text.stderr).toContain('stdin');
    expect(text.stderr).toContain('</dev/null');
    const json = await withOpenStdin(['--json', '--timeout', '1', 'go']).done;
    expect(json.code).toBe(124);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'timed_out', exitCode: 124 });
    const several = await withOpenStdin(['--json', '--timeout', '1', 'run', 'one', 'two']).done;
    expect(several.code).toBe(124);
    expect(JSON.parse(several.stdout).tasks.map((t: { status: string }) => t.status)).toEqual(['timed_out', 'timed_out']);
    expect(harness.server.requests).toHaveLength(0);
  });

  test('a deadline longer than one timer holds (--timeout 30d) does not end the wait at once', async () => {
    harness.server.script([{ text: 'reviewed' }]);
    const r = await piped("{ echo 'the diff'; sleep 1; }", ['--timeout', '30d', 'review this']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('reviewed\n');
  });

  test('SIGTERM while conch waits for stdin: --json still prints its one document (cancelled, SIGTERM, 143)', async () => {
    const { child, done } = withOpenStdin(['--json', 'go']);
    await catchesSigterm(child.pid);
    child.kill('SIGTERM');
    const r = await done;
    expect(r.code).toBe(143);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'cancelled', signal: 'SIGTERM', exitCode: 143 });
    expect(harness.server.requests).toHaveLength(0);
  });
});

describe('a signal after stdin ended, while the host starts', () => {
  // The read's own listeners were gone and the run's not yet there: Ctrl-C then killed conch with no
  // --json document (or, as the pipe closed with the same Ctrl-C, was lost and the task ran).
  for (const args of [['go'], ['run', 'one', 'two']]) {
    test(`conch ${args.join(' ')}: SIGINT while an MCP server starts cancels, with the --json document, and no model call`, async () => {
      harness.server.script(() => ({ text: 'should not run' }));
      // A server that says it started, then waits for the test's word before it exits (its start fails).
      await writeConfig(harness.dirs, {
        mcpServers: { slow: { command: 'sh', args: ['-c', 'touch started; while [ ! -e go ]; do sleep 0.05; done'], workspace: 'write' } },
      });
      const child = Bun.spawn([CONCH, ...MODEL, '--json', ...args], {
        cwd: harness.dirs.workspace,
        env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
        stdin: new Blob(['the diff']),
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const done = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      const started = join(harness.dirs.workspace, 'started');
      while (!existsSync(started)) await Bun.sleep(20);
      child.kill('SIGINT');
      writeFileSync(join(harness.dirs.workspace, 'go'), '');
      const [stdout, stderr, code] = await done;
      expect({ code, stderr }).toMatchObject({ code: 130 });
      const doc = JSON.parse(stdout);
      const statuses = args[0] === 'run' ? doc.tasks.map((t: { status: string }) => t.status) : [doc.status];
      expect(statuses).toEqual(args[0] === 'run' ? ['cancelled', 'cancelled'] : ['cancelled']);
      expect(harness.server.requests).toHaveLength(0);
    });
  }
});
