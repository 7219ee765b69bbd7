// Token, reasoning and sampling controls on the wire, through the real CLI and SDKs: output limits
// per model family, flag and config; --thinking as Anthropic budgets and OpenAI reasoning_effort
// where the model takes them (a one-line warning elsewhere); signed thinking passed back unchanged;
// thinking counted in --json and in a trace only with --trace-content; --temperature.
import { describe, expect, test } from 'bun:test';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness(async (dirs) => {
  await writeFile(join(dirs.workspace, 'a.txt'), 'alpha\n');
});

const run = (env: Record<string, string>, args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--json', '--ephemeral', ...args, 'read a.txt'], env });
const anthropic = () => anthropicEnv(harness.server.anthropicBaseUrl);
const openai = () => openaiEnv(harness.server.openaiBaseUrl);
const body = (i = 0) => harness.server.requests[i]!.body;

describe('output-token limit', () => {
  test('a default per model family, not one constant', async () => {
    const cases: [string, number][] = [
      ['anthropic/claude-sonnet-5-5', 64_000],
      ['anthropic/claude-opus-4-1', 32_000],
      ['anthropic/claude-3-5-haiku-latest', 8192],
    ];
    for (const [model, expected] of cases) {
      harness.server.requests.length = 0;
      harness.server.script([{ text: 'ok' }]);
      expect((await run(anthropic(), ['--model', model])).code).toBe(0);
      expect(body().max_tokens).toBe(expected);
    }
  });

  test('--max-output-tokens over config models["provider/model"] over providers.NAME over the top level', async () => {
    const cases: [object, string[], number][] = [
      [{ maxOutputTokens: 1111 }, [], 1111],
      [{ maxOutputTokens: 1111, providers: { anthropic: { type: 'anthropic', maxOutputTokens: 2222 } } }, [], 2222],
      [{ providers: { anthropic: { type: 'anthropic', maxOutputTokens: 2222 } }, models: { 'anthropic/claude-sonnet-5-5': { maxOutputTokens: 3333 } } }, [], 3333],
      [{ models: { 'anthropic/claude-sonnet-5-5': { maxOutputTokens: 3333 } } }, ['--max-output-tokens', '444'], 444],
    ];
    for (const [config, flags, expected] of cases) {
      harness.server.requests.length = 0;
      await writeConfig(harness.dirs, config);
      harness.server.script([{ text: 'ok' }]);
      expect((await run(anthropic(), ['--model', 'anthropic/claude-sonnet-5-5', ...flags])).code).toBe(0);
      expect(body().max_tokens).toBe(expected);
    }
  });

  test('OpenAI-compatible: max_tokens from the flag; a bad value is a usage error naming the flag', async () => {
    harness.server.script([{ text: 'ok' }]);
    expect((await run(openai(), ['--model', 'openai/gpt-4o', '--max-output-tokens', '900'])).code).toBe(0);
    expect(body().max_tokens).toBe(900);
    const bad = await run(openai(), ['--max-output-tokens', '0']);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).message).toContain('--max-output-tokens');
  });

  test('an answer cut at the limit is reported as truncation', async () => {
    harness.server.script([{ text: 'half an ans', stopReason: 'max_tokens' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--ephemeral', '--max-output-tokens', '5', 'go'], env: anthropic() });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("cut off at the model's output-token limit (raise it with --max-output-tokens)");
  });
});

describe('--thinking', () => {
  test('Anthropic: a thinking budget; signed and redacted thinking go back unchanged in the tool-use turn; counted in --json', async () => {
    harness.server.script([
      { thinking: { text: 'I should read the file first.', signature: 'SIG/abc+123==', redacted: 'REDACTED-BLOB' }, toolCalls: [{ name: 'read', arguments: { path: 'a.txt' } }] },
      { text: 'alpha' },
    ]);
    const r = await run(anthropic(), ['--model', 'anthropic/claude-sonnet-5-5', '--thinking', 'high']);
    expect(r.code).toBe(0);
    expect(body(0).thinking).toEqual({ type: 'enabled', budget_tokens: 32_768 });
    expect('temperature' in body(0)).toBe(false);
    const assistant = body(1).messages[1];
    expect(assistant.role).toBe('assistant');
    expect(assistant.content.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: 'I should read the file first.', signature: 'SIG/abc+123==' },
      { type: 'redacted_thinking', data: 'REDACTED-BLOB' },
    ]);
    expect(assistant.content[2]).toMatchObject({ type: 'tool_use', name: 'read' });
    const envelope = JSON.parse(r.stdout);
    expect(envelope.thinking).toEqual({ chars: 'I should read the file first.'.length, tokens: null });
    expect(r.stdout).not.toContain('I should read');
  });

  test('the budget leaves room for the answer under a small output limit; too small a limit is a warning, not a failure', async () => {
    harness.server.script([{ text: 'ok' }, { text: 'ok' }]);
    expect((await run(anthropic(), ['--model', 'anthropic/claude-sonnet-5-5', '--thinking', 'high', '--max-output-tokens', '8000'])).code).toBe(0);
    expect(body(0).thinking).toEqual({ type: 'enabled', budget_tokens: 8000 - 1024 });
    const r = await run(anthropic(), ['--model', 'anthropic/claude-sonnet-5-5', '--thinking', 'low', '--max-output-tokens', '1500']);
    expect(r.code).toBe(0);
    expect('thinking' in body(1)).toBe(false);
    expect(r.stderr.trim().split('\n').filter((l) => l.includes('--thinking'))).toHaveLength(1);
  });

  test('OpenAI: reasoning_effort for a reasoning model; reasoning tokens counted', async () => {
    harness.server.script([{ thinking: { text: 'hmm' }, text: 'done', usage: { input: 10, output: 50, reasoning: 40 } }]);
    const r = await run(openai(), ['--model', 'openai/gpt-5.4', '--thinking', 'medium']);
    expect(r.code).toBe(0);
    expect(body().reasoning_effort).toBe('medium');
    expect(JSON.parse(r.stdout).thinking).toEqual({ chars: 3, tokens: 40 });
  });

  test('a model without a reasoning control: one warning line, nothing sent, the run completes', async () => {
    harness.server.script([{ text: 'done' }]);
    const r = await run(openai(), ['--model', 'openai/gpt-4o', '--thinking', 'high']);
    expect(r.code).toBe(0);
    expect('reasoning_effort' in body()).toBe(false);
    expect(r.stderr).toBe('conch: --thinking high ignored: conch knows no reasoning control for openai/gpt-4o\n');
  });

  test('a bad level is a usage error; thinking from config', async () => {
    const bad = await run(anthropic(), ['--thinking', 'max']);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).message).toBe("--thinking takes off, low, medium or high, got 'max'");
    await writeConfig(harness.dirs, { models: { 'anthropic/claude-opus-4-1': { thinking: 'low' } } });
    harness.server.script([{ text: 'ok' }]);
    expect((await run(anthropic(), ['--model', 'anthropic/claude-opus-4-1'])).code).toBe(0);
    expect(body().thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
  });

  test('in a trace the thinking text appears only with --trace-content', async () => {
    const trace = join(harness.dirs.home, 'trace.jsonl');
    const turn = { thinking: { text: 'secret plan' }, text: 'done' };
    for (const content of [false, true]) {
      harness.server.script([turn]);
      const args = ['--model', 'anthropic/claude-sonnet-5-5', '--thinking', 'low', '--trace', trace, ...(content ? ['--trace-content'] : [])];
      expect((await run(anthropic(), args)).code).toBe(0);
      const events = (await readFile(trace, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
      const thinking = events.filter((e) => e.type === 'thinking.delta');
      expect(thinking.length).toBeGreaterThan(0);
      expect(thinking.map((e) => e.text ?? '').join('')).toBe(content ? 'secret plan' : '');
      if (!content) expect(thinking.map((e) => e.chars).reduce((a, b) => a + b, 0)).toBe('secret plan'.length);
    }
  });
});

describe('--temperature', () => {
  test('sent where the model takes one; a warning where it does not, or while Anthropic thinks', async () => {
    harness.server.script([{ text: 'a' }, { text: 'b' }, { text: 'c' }]);
    expect((await run(openai(), ['--model', 'openai/gpt-4o', '--temperature', '0.2'])).code).toBe(0);
    expect(body(0).temperature).toBe(0.2);
    const r = await run(openai(), ['--model', 'openai/gpt-5.4', '--temperature', '0.2']);
    expect('temperature' in body(1)).toBe(false);
    expect(r.stderr).toContain('--temperature ignored: openai/gpt-5.4 does not accept a temperature');
    const t = await run(anthropic(), ['--model', 'anthropic/claude-sonnet-5-5', '--temperature', '0.5', '--thinking', 'low']);
    expect(t.code).toBe(0);
    expect('temperature' in body(2)).toBe(false);
    expect(t.stderr).toContain('takes no temperature while thinking');
    const bad = await run(openai(), ['--temperature', '3']);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).message).toContain('--temperature takes a number from 0 to 2');
  });
});
