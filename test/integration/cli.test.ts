// The real CLI process against the local model server, through the real SDKs, on both protocols.
import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, CONCH, conchEnv, openaiEnv, runConch, writeConfig, useHarness } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  // Small retry delays keep the retry tests quick; the figures are config, not magic.
  await writeConfig(d, { retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 20 } });
});

const protocols = [
  { name: 'anthropic', model: 'anthropic/test-model', env: () => anthropicEnv(harness.server.anthropicBaseUrl) },
  { name: 'openai', model: 'openai/test-model', env: () => openaiEnv(harness.server.openaiBaseUrl) },
] as const;

/** The text of every tool result the model received in a request, in order. */
function toolResultsIn(body: any): string[] {
  const out: string[] = [];
  for (const m of body.messages ?? []) {
    if (m.role === 'tool') out.push(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
    if (m.role === 'user' && Array.isArray(m.content)) {
      for (const b of m.content) if (b.type === 'tool_result') out.push(JSON.stringify(b.content));
    }
  }
  return out;
}

function systemOf(body: any): string {
  if (typeof body.system === 'string') return body.system;
  if (Array.isArray(body.system)) return body.system.map((b: any) => b.text).join('\n');
  const sys = (body.messages ?? []).find((m: any) => m.role === 'system' || m.role === 'developer');
  return typeof sys?.content === 'string' ? sys.content : JSON.stringify(sys?.content ?? '');
}

function toolNamesOf(body: any): string[] {
  return (body.tools ?? []).map((t: any) => t.name ?? t.function?.name).sort();
}

for (const p of protocols) {
  describe(`conch CLI over ${p.name}`, () => {
    const run = (args: string[], extra: { stdin?: string; env?: Record<string, string> } = {}) =>
      runConch({ dirs: harness.dirs, args: ['--model', p.model, ...args], env: { ...p.env(), ...extra.env }, stdin: extra.stdin });

    test('a text-only answer streams to stdout and exits 0', async () => {
      harness.server.script([{ text: ['Hello', ', ', 'world.'] }]);
      const r = await run(['say hello']);
      expect(r.stderr).not.toContain('at ');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('Hello, world.\n');
      expect(harness.server.requests).toHaveLength(1);
      expect(toolNamesOf(harness.server.requests[0]!.body)).toEqual(['bash', 'edit', 'read', 'write']);
      expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('say hello');
    });

    test('multi-turn tool use: results go back in the same conversation, in order', async () => {
      await writeFile(join(harness.dirs.workspace, 'notes.txt'), 'alpha\nbeta\n');
      harness.server.script([
        { toolCalls: [
          { name: 'read', arguments: { path: 'notes.txt' } },
          { name: 'write', arguments: { path: 'out/summary.txt', content: 'two lines\n' } },
        ] },
        { text: 'Done.' },
      ]);
      const r = await run(['summarise notes.txt']);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('Done.\n');
      expect(readFileSync(join(harness.dirs.workspace, 'out/summary.txt'), 'utf8')).toBe('two lines\n');
      const results = toolResultsIn(harness.server.requests[1]!.body);
      expect(results).toHaveLength(2);
      expect(results[0]).toContain('alpha');
      expect(results[1]).not.toContain('error');
    });

    test('piped stdout gets only the final answer, not the text between tool calls', async () => {
      harness.server.script([
        { text: 'Let me look.', toolCalls: [{ name: 'read', arguments: { path: 'missing.txt' } }] },
        { text: 'The answer.' },
      ]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('The answer.\n');
    });

    test('on a terminal every turn streams, each on its own paragraph', async () => {
      harness.server.script([
        { text: 'Let me look.', toolCalls: [{ name: 'read', arguments: { path: 'missing.txt' } }] },
        { text: 'The answer.' },
      ]);
      // `script` gives conch a pseudo-terminal, as a user's shell would.
      const command = [CONCH, '--model', p.model, 'go'].map((a) => `'${a}'`).join(' ');
      // Asynchronous on purpose: the model server answers from this same process.
      const child = Bun.spawn(['script', '-qec', command, '/dev/null'], {
        cwd: harness.dirs.workspace,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: harness.dirs.home, XDG_CONFIG_HOME: harness.dirs.configHome, NO_COLOR: '1', TERM: 'dumb', ...p.env() },
        stdin: 'ignore',
        stdout: 'pipe',
      });
      const screen = (await new Response(child.stdout).text()).replaceAll('\r', '');
      expect(await child.exited).toBe(0);
      expect(screen).toContain('Let me look.\n');
      expect(screen).toContain('\nThe answer.\n');
      expect(screen).toContain('› read missing.txt');
    });

    test('malformed JSON arguments go back to the model as a tool error and the run continues', async () => {
      harness.server.script([{ toolCalls: [{ name: 'read', arguments: '{"path": "notes' }] }, { text: 'recovered' }]);
      const r = await run(['read it']);
      expect(r.code).toBe(0);
      expect(toolResultsIn(harness.server.requests[1]!.body)[0]).toContain('not valid JSON');
    });

    test('a NUL byte in a file tool path: a tool error naming it, not Node\'s message with the absolute path', async () => {
      harness.server.script([
        { toolCalls: [
          { name: 'read', arguments: { path: 'a\u0000b.txt' } },
          { name: 'write', arguments: { path: 'c\u0000d.txt', content: 'x' } },
          { name: 'edit', arguments: { path: 'e\u0000f.txt', edits: [{ old_text: 'a', new_text: 'b' }] } },
        ] },
        { text: 'recovered' },
      ]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      const results = toolResultsIn(harness.server.requests[1]!.body);
      expect(results).toHaveLength(3);
      for (const result of results) {
        expect(result).toContain('contains a NUL byte, which no file name can hold');
        expect(result).not.toContain(harness.dirs.workspace);
      }
    });

    test('an unknown tool is reported to the model with the available tools', async () => {
      harness.server.script([{ toolCalls: [{ name: 'frobnicate', arguments: {} }] }, { text: 'ok' }]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      const result = toolResultsIn(harness.server.requests[1]!.body)[0]!;
      expect(result).toContain("unknown tool 'frobnicate'");
      expect(result).toContain('read');
    });

    test('a schema violation names the field, unknown keys included', async () => {
      harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 7, colour: 'red' } }] }, { text: 'ok' }]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      const result = toolResultsIn(harness.server.requests[1]!.body)[0]!;
      expect(result).toContain("unknown field 'colour'");
      expect(result).toContain("field 'path'");
    });

    test('429 with retry-after, then success', async () => {
      harness.server.script([{ error: { status: 429, message: 'slow down', retryAfter: '0' } }, { text: 'after retry' }]);
      const r = await run(['--json', 'go']);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).output).toBe('after retry');
      expect(harness.server.requests).toHaveLength(2);
    });

    test('401 says where the key goes: the user config file where it is (XDG_CONFIG_HOME), not a fixed ~/.config', async () => {
      harness.server.script([{ error: { status: 401, message: 'invalid key' } }]);
      const r = await run(['go']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`apiKey in ${join(harness.dirs.configHome, 'conch', 'config.json')}) to a valid key`);
    });

    test('500 forever ends as failed provider_unavailable with exit code 1', async () => {
      harness.server.script(() => ({ error: { status: 500, message: 'boom' } }));
      const r = await run(['--json', 'go']);
      expect(r.code).toBe(1);
      const env = JSON.parse(r.stdout);
      expect(env.status).toBe('failed');
      expect(env.code).toBe('provider_unavailable');
      expect(harness.server.requests).toHaveLength(3); // first attempt + maxRetries 2
    });

    test('--max-turns 1 stops before a tool whose result no model call could read', async () => {
      harness.server.script([{ toolCalls: [{ name: 'write', arguments: { path: 'never.txt', content: 'x' } }] }]);
      const r = await run(['--json', '--max-turns', '1', 'go']);
      expect(r.code).toBe(4);
      const env = JSON.parse(r.stdout);
      expect(env.status).toBe('limit_exceeded');
      expect(env.limit).toBe('model_calls');
      expect(env.message).toBe('the model-call limit of 1 was reached with 1 tool call pending (limit model_calls; flag --max-turns)');
      expect(existsSync(join(harness.dirs.workspace, 'never.txt'))).toBe(false);
    });

    test('--max-tool-calls names the tool_calls limit', async () => {
      harness.server.script([{ toolCalls: [
        { name: 'read', arguments: { path: 'a' } },
        { name: 'read', arguments: { path: 'b' } },
      ] }]);
      const r = await run(['--json', '--max-tool-calls', '1', 'go']);
      expect(r.code).toBe(4);
      expect(JSON.parse(r.stdout).limit).toBe('tool_calls');
    });

    test('--limit sets any limit: a tiny context budget ends limit_exceeded context_bytes', async () => {
      harness.server.script([{ text: 'never asked' }]);
      const r = await run(['--json', '--limit', 'context_bytes=100', 'go']);
      expect(r.code).toBe(4);
      expect(JSON.parse(r.stdout).limit).toBe('context_bytes');
      expect(harness.server.requests).toHaveLength(0);
    });

    test('--json prints exactly one document with the documented shape', async () => {
      harness.server.script([{ text: 'answer', usage: { input: 12, output: 3 } }]);
      const r = await run(['--json', 'go']);
      expect(r.code).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      const env = JSON.parse(lines[0]!);
      expect(env).toMatchObject({
        version: 1,
        status: 'completed',
        output: 'answer',
        exitCode: 0,
        mode: 'restricted',
        counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 },
      });
      expect(env.sandbox).toBe('bwrap');
      expect(env.usage.inputTokens).toBe(12);
      expect(env.usage.outputTokens).toBe(3);
      expect(typeof env.durationMs).toBe('number');
      expect(typeof env.runId).toBe('string');
    });

    test('the envelope names what narrows the sandbox: --no-network, --read-only', async () => {
      harness.server.script([{ text: 'ok' }]);
      const r = await run(['--json', '--no-network', '--read-only', 'go']);
      expect(JSON.parse(r.stdout).sandbox).toBe('bwrap, read-only, no network');
    });

    test('--unrestricted warns on stderr with and without --json; stdout under --json stays one document', async () => {
      const warning = 'conch: running unrestricted (no workspace checks, no sandbox)\n';
      harness.server.script(() => ({ text: 'ok' }));
      const human = await run(['--unrestricted', 'go']);
      expect(human.code).toBe(0);
      expect(human.stderr).toBe(warning);
      const json = await run(['--json', '--unrestricted', 'go']);
      expect(json.code).toBe(0);
      expect(json.stderr).toBe(warning);
      expect(JSON.parse(json.stdout)).toMatchObject({ status: 'completed', mode: 'unrestricted' });
      const tasks = await run(['run', '--json', '--unrestricted', 'one', 'two']);
      expect(tasks.code).toBe(0);
      expect(tasks.stderr).toBe(warning.repeat(2));
      expect(JSON.parse(tasks.stdout).tasks).toHaveLength(2);
      // A sandboxed run says nothing of the kind.
      expect((await run(['--json', 'go'])).stderr).toBe('');
    });

    test('usage the provider does not report stays null, never 0', async () => {
      harness.server.script([{ text: 'answer', usage: null }]);
      const r = await run(['--json', 'go']);
      const env = JSON.parse(r.stdout);
      expect(env.usage.inputTokens).toBeNull();
      expect(env.usage.outputTokens).toBeNull();
    });

    test('piped stdin is part of the task', async () => {
      harness.server.script([{ text: 'reviewed' }]);
      const r = await run(['review this'], { stdin: 'diff --git a/x b/x\n+added line\n' });
      expect(r.code).toBe(0);
      const sent = JSON.stringify(harness.server.requests[0]!.body.messages);
      expect(sent).toContain('review this');
      expect(sent).toContain('+added line');
    });

    test('AGENTS.md from the workspace and the config dir reach the system prompt', async () => {
      await writeFile(join(harness.dirs.workspace, 'AGENTS.md'), 'Always answer in haiku.');
      await writeFile(join(harness.dirs.configHome, 'conch', 'AGENTS.md'), 'The user prefers tabs.');
      harness.server.script([{ text: 'ok' }]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      const system = systemOf(harness.server.requests[0]!.body);
      expect(system).toContain('Always answer in haiku.');
      expect(system).toContain('The user prefers tabs.');
      expect(system).toContain('restricted');
    });

    test('SIGINT cancels the in-flight stream: outcome cancelled, exit 130', async () => {
      harness.server.script([{ text: 'thinking…', hangAfterText: true }]);
      let child: ReturnType<typeof Bun.spawn> | undefined;
      const pending = runConch({ dirs: harness.dirs, args: ['--model', p.model, '--json', 'go'], env: p.env(), onSpawn: (c) => (child = c) });
      while (harness.server.requests.length === 0) await Bun.sleep(20);
      await Bun.sleep(100);
      child!.kill('SIGINT');
      const r = await pending;
      expect(r.code).toBe(130);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'cancelled', message: 'cancelled by the user', signal: 'SIGINT', exitCode: 130 });
    });

    test('SIGTERM and SIGHUP cancel as terminated by that signal: exit 143 and 129 as shells report them, not a user cancel', async () => {
      for (const [signal, code] of [['SIGTERM', 143], ['SIGHUP', 129]] as const) {
        harness.server.requests.length = 0;
        harness.server.script([{ text: 'thinking…', hangAfterText: true }]);
        let child: ReturnType<typeof Bun.spawn> | undefined;
        const pending = runConch({ dirs: harness.dirs, args: ['--model', p.model, '--json', 'go'], env: p.env(), onSpawn: (c) => (child = c) });
        while (harness.server.requests.length === 0) await Bun.sleep(20);
        await Bun.sleep(100);
        child!.kill(signal);
        const r = await pending;
        expect(r.code).toBe(code);
        const doc = JSON.parse(r.stdout);
        expect(doc).toMatchObject({ status: 'cancelled', signal, exitCode: code, partial: true });
        expect(doc.message).toStartWith(`terminated by signal ${signal}`);
        expect(doc.message).not.toContain('by the user');
        expect(doc.code).toBeUndefined();
      }
      // The human display says it too.
      harness.server.requests.length = 0;
      harness.server.script([{ text: 'thinking…', hangAfterText: true }]);
      let child: ReturnType<typeof Bun.spawn> | undefined;
      const pending = runConch({ dirs: harness.dirs, args: ['--model', p.model, 'go'], env: p.env(), onSpawn: (c) => (child = c) });
      while (harness.server.requests.length === 0) await Bun.sleep(20);
      await Bun.sleep(100);
      child!.kill('SIGTERM');
      const r = await pending;
      expect(r.code).toBe(143);
      expect(r.stderr).toContain('conch: cancelled: terminated by signal SIGTERM');
    });

    test('SIGINT during a sandboxed command kills it: cancelled, and no process is left behind', async () => {
      // A sleep length no other process on the machine will have, so pgrep finds only this one.
      const marker = `31.${Math.floor(Math.random() * 1e9)}`;
      harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `sleep ${marker}` } }] }, { text: 'unreachable' }]);
      let child: ReturnType<typeof Bun.spawn> | undefined;
      const pending = runConch({ dirs: harness.dirs, args: ['--model', p.model, '--json', 'go'], env: p.env(), onSpawn: (c) => (child = c) });
      const running = async () => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).exitCode === 0;
      for (let i = 0; i < 200 && !(await running()); i++) await Bun.sleep(25);
      expect(await running()).toBe(true);
      child!.kill('SIGINT');
      const r = await pending;
      expect(r.code).toBe(130);
      expect(JSON.parse(r.stdout).status).toBe('cancelled');
      expect(await running()).toBe(false);
      expect(harness.server.requests).toHaveLength(1);
    });

    test('a second SIGINT exits at once, without waiting for a stubborn command', async () => {
      // The command survives TERM, so the first SIGINT's cleanup must wait for the KILL grace; the
      // second one exits before that, so no envelope is printed. Unsandboxed on purpose: inside
      // bubblewrap, killing bwrap ends its whole PID namespace at once and nothing can be stubborn.
      // Each SIGINT goes once the command says conch is where it should be: the first once the
      // command runs, the second once the first one's TERM reached it (two signals sent while
      // conch waits for the CPU arrive as one, which only cancels).
      const marker = `0.1${Math.floor(Math.random() * 1e9)}`;
      const running = join(harness.dirs.home, 'running');
      const termed = join(harness.dirs.home, 'termed');
      const command = `trap "touch '${termed}'" TERM; trap "" INT; touch '${running}'; while :; do sleep ${marker}; done`;
      harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }]);
      let child: ReturnType<typeof Bun.spawn> | undefined;
      const pending = runConch({ dirs: harness.dirs, args: ['--model', p.model, '--json', '--unrestricted', 'go'], env: p.env(), onSpawn: (c) => (child = c) });
      while (!existsSync(running) && child!.exitCode === null) await Bun.sleep(20);
      child!.kill('SIGINT');
      while (!existsSync(termed) && child!.exitCode === null) await Bun.sleep(20);
      child!.kill('SIGINT');
      const r = await pending;
      expect(r.code).toBe(130);
      expect(r.stdout).toBe('');
      // Exiting at once still takes the command's process group with it (SIGKILLed processes can
      // take a moment to leave the process table on a loaded machine).
      const alive = async () => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).exitCode === 0;
      for (let i = 0; i < 40 && (await alive()); i++) await Bun.sleep(50);
      expect(await alive()).toBe(false);
    });

    test('--timeout ends a hanging run as timed_out with exit 124', async () => {
      harness.server.script([{ text: 'slow', hangAfterText: true }]);
      const r = await run(['--json', '--timeout', '1s', 'go']);
      expect(r.code).toBe(124);
      expect(JSON.parse(r.stdout).status).toBe('timed_out');
    });

    test('--trace writes JSONL events without content unless asked', async () => {
      harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 'secret-name.txt' } }] }, { text: 'private answer' }]);
      const trace = join(harness.dirs.home, 'trace.jsonl');
      const r = await run(['--trace', trace, 'go']);
      expect(r.code).toBe(0);
      const text = readFileSync(trace, 'utf8');
      const types = text.trim().split('\n').map((l) => JSON.parse(l).type);
      expect(types[0]).toBe('run.started');
      expect(types.at(-1)).toBe('run.finished');
      expect(types).toContain('tool.started');
      expect(text).not.toContain('secret-name.txt');
      expect(text).not.toContain('private answer');
      const withContent = join(harness.dirs.home, 'trace2.jsonl');
      harness.server.script([{ text: 'private answer' }]);
      await run(['--trace', withContent, '--trace-content', 'go']);
      expect(readFileSync(withContent, 'utf8')).toContain('private answer');
    });
  });
}

describe('setup errors', () => {
  test('no model configured: a one-paragraph message naming the ways to configure one, exit 2', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['do something'], env: {} });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('ANTHROPIC_API_KEY');
    expect(r.stderr).toContain('--base-url');
    expect(r.stderr).toContain('config.json');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  test('a bad config names the file and the key, exit 2, no stack trace', async () => {
    await writeConfig(harness.dirs, { limits: { model_calls: 'lots' } });
    const r = await runConch({ dirs: harness.dirs, args: ['go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('config.json');
    expect(r.stderr).toContain('model_calls');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  test('--json with an unknown flag still prints one JSON document', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['--json', '--bogus', 'go'], env: {} });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid', exitCode: 2 });
    expect(r.stderr).toContain('--bogus');
  });

  test('--json setup errors are still one JSON document', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['--json', 'go'], env: {} });
    expect(r.code).toBe(2);
    const env = JSON.parse(r.stdout);
    expect(env.status).toBe('failed');
    expect(env.code).toBe('config_invalid');
  });

  test('a working directory removed under the shell: a setup error saying so, in text and in --json', async () => {
    // The shell stays in a directory that is gone (rm -rf build after cd build): conch starts there.
    const script = `mkdir gone && cd gone && rmdir ../gone && exec "$@"`;
    const run = async (args: string[]) => {
      const child = Bun.spawn(['sh', '-c', script, 'sh', CONCH, '--model', 'anthropic/test-model', ...args], {
        cwd: harness.dirs.workspace,
        env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      return { stdout, stderr, code };
    };
    const text = await run(['go']);
    expect(text.code).toBe(2);
    expect(text.stderr).toContain('conch: the current directory no longer exists');
    expect(text.stderr).not.toContain('uv_cwd');
    const json = await run(['--json', 'go']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid' });
    expect(harness.server.requests).toHaveLength(0);
  });

  test('--version and --help answer without a model', async () => {
    const v = await runConch({ dirs: harness.dirs, args: ['--version'], env: {} });
    expect(v.code).toBe(0);
    expect(v.stdout).toContain('0.1.0');
    const h = await runConch({ dirs: harness.dirs, args: ['--help'], env: {} });
    expect(h.code).toBe(0);
    expect(h.stdout).toContain('Usage');
  });
});

test('TERM=dumb: a terminal that cannot erase a line gets no spinner and no escape code at all', async () => {
  // The wait gives the spinner (a frame every 80 ms) time to draw, as it would on any slow model.
  harness.server.script([{ text: 'The answer.', delayMs: 800 }]);
  const command = [CONCH, '--model', 'anthropic/test-model', 'go'].map((a) => `'${a}'`).join(' ');
  const child = Bun.spawn(['script', '-qec', command, '/dev/null'], {
    cwd: harness.dirs.workspace,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: harness.dirs.home, XDG_CONFIG_HOME: harness.dirs.configHome, TERM: 'dumb', ...anthropicEnv(harness.server.anthropicBaseUrl) },
    stdin: 'ignore',
    stdout: 'pipe',
  });
  const screen = await new Response(child.stdout).text();
  expect(await child.exited).toBe(0);
  expect(screen).toContain('The answer.');
  expect(screen).not.toContain('\x1b');
});
