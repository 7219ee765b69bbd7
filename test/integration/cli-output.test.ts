// What conch writes reaches a slow reader in full, on every exit path, and a run that did not
// complete prints no answer. Through the real CLI process and the local model server.
import { describe, expect, test } from 'bun:test';
import { closeSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, CONCH, conchEnv, runConch, useHarness } from '../support/cli.ts';
import { loadLibc } from '../../src/process/libc.ts';

const harness = useHarness();
const MB = 1024 * 1024;

/** Resolves once the model server has handed out every scripted turn (the run is nearly over). */
async function lastTurnServed(): Promise<void> {
  while (harness.server.requests.length === 0 || harness.server.remaining() > 0) await Bun.sleep(20);
}

/**
 * Run conch with stdout (or stderr) into a pipe whose reader starts reading only once conch has
 * exited, or once `settled` has resolved and a while has passed (a conch that waits for its reader,
 * as it must, never exits before). A conch that exits with bytes still queued in the process loses
 * everything past the pipe's 64 KiB.
 */
async function slowReader(args: string[], opts: { stream?: 'stdout' | 'stderr'; signalAfterMs?: number; settled?: () => Promise<void> } = {}) {
  const status = join(harness.dirs.home, 'status');
  const go = join(harness.dirs.home, 'go');
  const redirect = opts.stream === 'stderr' ? '2>&1 >/dev/null' : '2>/dev/null';
  // The signal (a polite kill, as a closed terminal would send) goes to conch itself, not the shell.
  const start = opts.signalAfterMs === undefined ? '"$@"' : `"$@" & pid=$!; sleep ${opts.signalAfterMs / 1000}; kill -TERM $pid; wait $pid`;
  const script = `status="$1"; go="$2"; shift 2
{ ${start}; echo $? > "$status"; } ${redirect} | { while [ ! -s "$status" ] && [ ! -e "$go" ]; do sleep 0.05; done; cat; }`;
  const child = Bun.spawn(['sh', '-c', script, 'sh', status, go, CONCH, '--model', 'anthropic/test-model', ...args], {
    cwd: harness.dirs.workspace,
    env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const output = new Response(child.stdout).text();
  await (opts.settled ?? (opts.signalAfterMs === undefined ? lastTurnServed : () => Bun.sleep(opts.signalAfterMs!)))();
  await Bun.sleep(1500);
  await writeFile(go, '');
  await child.exited;
  return { output: await output, code: Number(readFileSync(status, 'utf8')) };
}

describe('a slow reader gets every byte', () => {
  test('a 1 MB answer on piped stdout arrives whole', async () => {
    const answer = 'a'.repeat(MB);
    harness.server.script([{ text: [answer] }]);
    const r = await slowReader(['go']);
    expect(r.code).toBe(0);
    expect(r.output.length).toBe(MB + 1);
    expect(r.output).toBe(`${answer}\n`);
  });

  test('a 4 MB --json envelope arrives whole and parses', async () => {
    const answer = 'j'.repeat(4 * MB - 1024);
    harness.server.script([{ text: [answer] }]);
    const r = await slowReader(['--json', '--limit', 'model_output_bytes=8388608', 'go']);
    expect(r.code).toBe(0);
    const env = JSON.parse(r.output);
    expect(env.status).toBe('completed');
    expect(env.output).toBe(answer);
  });

  test('limit_exceeded: the envelope with a 1 MB partial output arrives whole', async () => {
    const text = 'p'.repeat(MB);
    harness.server.script([{ text: [text], toolCalls: [{ name: 'read', arguments: { path: 'x' } }] }]);
    const r = await slowReader(['--json', '--max-turns', '1', 'go']);
    expect(r.code).toBe(4);
    const env = JSON.parse(r.output);
    expect(env.status).toBe('limit_exceeded');
    expect(env.output).toBe(text);
  });

  test('failed mid-stream: the envelope with a 1 MB partial output arrives whole', async () => {
    const text = 'f'.repeat(MB);
    harness.server.script(() => ({ text: [text], failMidStream: true }));
    const r = await slowReader(['--json', '--limit', 'model_output_bytes=8388608', 'go']);
    expect(r.code).toBe(1);
    const env = JSON.parse(r.output);
    expect(env.status).toBe('failed');
    expect(env.output).toBe(text);
  });

  test('cancelled by SIGTERM: the envelope with a 1 MB partial output arrives whole', async () => {
    const text = 'c'.repeat(MB);
    harness.server.script([{ text: [text], hangAfterText: true }]);
    const r = await slowReader(['--json', 'go'], { signalAfterMs: 3000 });
    expect(r.code).toBe(143);
    const env = JSON.parse(r.output);
    expect(env).toMatchObject({ status: 'cancelled', message: 'terminated by signal SIGTERM', exitCode: 143 });
    expect(env.output).toBe(text);
  });

  test('a setup error under --json: a 100 KB document arrives whole, and on stderr the message too', async () => {
    // A model name the user typed is echoed in the message; make it larger than a pipe holds.
    const model = `nosuchprovider/${'m'.repeat(100_000)}`;
    const json = await slowReader(['--json', '--model', model, 'go'], { settled: () => Bun.sleep(1000) });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.output).message).toContain(model);
    const text = await slowReader(['--model', model, 'go'], { stream: 'stderr', settled: () => Bun.sleep(1000) });
    expect(text.code).toBe(2);
    expect(text.output).toContain(model);
  });
});

test("a plugin's 1 MB of prints (sent to stderr under its name) reach a slow stderr reader whole", async () => {
  const tools = join(harness.dirs.configHome, 'conch', 'tools');
  await mkdir(tools, { recursive: true });
  await writeFile(join(tools, 'loud.ts'), `
    import { defineTool, Type } from 'conch';
    export default defineTool({
      name: 'loud', description: 'prints a lot', parameters: Type.Object({}),
      async execute() { console.log('L'.repeat(${MB})); return 'printed'; },
    });`);
  harness.server.script([{ toolCalls: [{ name: 'loud', arguments: {} }] }, { text: 'done' }]);
  // Writes block while nobody reads, so the tool, and the second turn, wait for the reader.
  const firstTurnServed = async () => {
    while (harness.server.requests.length === 0) await Bun.sleep(20);
  };
  const r = await slowReader(['go'], { stream: 'stderr', settled: firstTurnServed });
  expect(r.code).toBe(0);
  expect(r.output).toContain(`[loud] ${'L'.repeat(MB)}\n`);
});

describe('a run that did not complete prints no answer', () => {
  test('limit_exceeded with piped stdout: the intermediate text is not printed as the answer', async () => {
    harness.server.script([{ text: 'Let me find remaining TODOs.', toolCalls: [{ name: 'read', arguments: { path: 'x' } }] }]);
    const r = await runConch({
      dirs: harness.dirs,
      args: ['--model', 'anthropic/test-model', '--max-turns', '1', 'go'],
      env: anthropicEnv(harness.server.anthropicBaseUrl),
    });
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('limit_exceeded');
  });

  test('--json: the last text is `output`, marked partial; a completed run is not partial', async () => {
    harness.server.script([{ text: 'Let me find remaining TODOs.', toolCalls: [{ name: 'read', arguments: { path: 'x' } }] }]);
    const run = (args: string[]) =>
      runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--json', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    const stopped = JSON.parse((await run(['--max-turns', '1', 'go'])).stdout);
    expect(stopped).toMatchObject({ status: 'limit_exceeded', output: 'Let me find remaining TODOs.', partial: true });
    harness.server.script([{ text: 'Done.' }]);
    const done = JSON.parse((await run(['go'])).stdout);
    expect(done).toMatchObject({ status: 'completed', output: 'Done.', partial: false });
  });
});

describe('output that reaches no one is no success', () => {
  const args = (...rest: string[]) => [CONCH, '--model', 'anthropic/test-model', ...rest, 'go'];
  const env = () => conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl));

  /** conch with stdout closed (`>&-`), as the shell starts it. */
  async function stdoutClosed(rest: string[]) {
    const child = Bun.spawn(['sh', '-c', '"$@" >&-', 'sh', ...args(...rest)], { cwd: harness.dirs.workspace, env: env(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    return { code, stderr };
  }

  /** conch with stdout a pipe whose reader closed its end before conch started. */
  async function readerGone(rest: string[]) {
    const fds = loadLibc()!.pipe()!;
    closeSync(fds[0]);
    try {
      const child = Bun.spawn(args(...rest), { cwd: harness.dirs.workspace, env: env(), stdin: 'ignore', stdout: fds[1], stderr: 'pipe' });
      const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      return { code, stderr };
    } finally {
      closeSync(fds[1]);
    }
  }

  for (const [name, rest] of [['--json', ['--json']], ['human output', []]] as const) {
    test(`${name}, stdout closed: exit 1 and a line on stderr`, async () => {
      harness.server.script([{ text: 'the answer' }]);
      const r = await stdoutClosed([...rest]);
      expect(r.stderr).toContain('conch: the output could not be written to stdout: it was closed when conch started\n');
      expect(r.code).toBe(1);
    });

    // `conch … | head -1`: the reader left on purpose, so nothing on stderr (as git or grep), but exit 1.
    test(`${name}, the pipe's reader gone: exit 1, and stderr says nothing`, async () => {
      harness.server.script([{ text: 'the answer' }]);
      const r = await readerGone([...rest]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(1);
    });
  }

  test('a run that did not complete keeps its own exit code', async () => {
    harness.server.script([{ text: 'partial', toolCalls: [{ name: 'read', arguments: { path: 'x' } }] }]);
    const r = await stdoutClosed(['--json', '--max-turns', '1']);
    expect(r.stderr).toContain('could not be written to stdout');
    expect(r.code).toBe(4);
    harness.server.script([{ text: 'partial', toolCalls: [{ name: 'read', arguments: { path: 'x' } }] }]);
    expect(await readerGone(['--json', '--max-turns', '1'])).toEqual({ code: 4, stderr: '' });
  });

  // The help and the version are output a script reads too (`conch --version > v.txt` on a full disk).
  test('--version and --help that reach no one: exit 1 and a line on stderr, closed or on a full device', async () => {
    for (const argv of [['--version'], ['-v'], ['--version', 'x'], ['--help'], ['help'], ['help', 'sessions'], ['tools', '--help'], ['sandbox']]) {
      for (const [how, redirect] of [['closed', '>&-'], ['full', '>/dev/full']] as const) {
        const child = Bun.spawn(['sh', '-c', `"$@" ${redirect}`, 'sh', CONCH, ...argv], { cwd: harness.dirs.workspace, env: env(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
        const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
        const why = how === 'closed' ? 'it was closed when conch started' : 'ENOSPC';
        expect({ argv, how, code, said: stderr.includes(`conch: the output could not be written to stdout: ${why}`) }).toEqual({ argv, how, code: 1, said: true });
        expect(stderr.match(/could not be written/g)).toHaveLength(1);
      }
    }
    // Written, they still exit 0 with the text on stdout.
    const ok = Bun.spawnSync([CONCH, '--version'], { cwd: harness.dirs.workspace, env: env(), stdin: 'ignore' });
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout.toString()).toMatch(/^conch \d+\.\d+\.\d+\n$/);
  });

  test('stdout to /dev/null is a reader like any other', async () => {
    harness.server.script([{ text: 'the answer' }]);
    const child = Bun.spawn(args('--json'), { cwd: harness.dirs.workspace, env: env(), stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' });
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
