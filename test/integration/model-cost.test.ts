// Cost through the real CLI and SDKs: priced from the shipped table or config, null when any
// figure is unknown, and --max-cost / limits.cost_usd ending the run before a call the budget
// cannot cover at the worst case of its output limit.
import { describe, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness();
const run = async (env: Record<string, string>, args: string[]) => {
  const r = await runConch({ dirs: harness.dirs, args: ['--json', '--ephemeral', ...args, 'go'], env });
  return { ...r, envelope: JSON.parse(r.stdout) };
};
const anthropic = () => anthropicEnv(harness.server.anthropicBaseUrl);
const openai = () => openaiEnv(harness.server.openaiBaseUrl);
const close = (a: number, b: number) => expect(Math.abs(a - b)).toBeLessThan(1e-12);

describe('cost in the envelope', () => {
  test('Anthropic list prices: input, output, cache reads and writes each at their own price', async () => {
    harness.server.script([{ text: 'ok', usage: { input: 1000, output: 100, cacheRead: 2000, cacheWrite: 500 } }]);
    const { envelope } = await run(anthropic(), ['--model', 'anthropic/claude-sonnet-4-5-20250929']);
    expect(envelope.cost.estimated).toBe(true);
    close(envelope.cost.usd, (1000 * 3 + 100 * 15 + 2000 * 0.3 + 500 * 3.75) / 1e6);
  });

  test('OpenAI: the cached part of the prompt at the cached price, summed over calls', async () => {
    harness.server.script([
      { toolCalls: [{ name: 'nothing', arguments: {} }], usage: { input: 1000, output: 100, cacheRead: 400 } },
      { text: 'ok', usage: { input: 1000, output: 100, cacheRead: 400 } },
    ]);
    const { envelope } = await run(openai(), ['--model', 'openai/gpt-4o']);
    expect(envelope.status).toBe('completed');
    close(envelope.cost.usd, (2 * (600 * 2.5 + 400 * 1.25 + 100 * 10)) / 1e6);
  });

  test('the default models are priced: claude-sonnet-5-5 and gpt-5.4 from the shipped table', async () => {
    harness.server.script([{ text: 'ok', usage: { input: 1000, output: 100, cacheRead: 2000, cacheWrite: 500 } }]);
    const claude = (await run(anthropic(), [])).envelope;
    expect(claude.model).toBe('claude-sonnet-5-5');
    expect(claude.cost.estimated).toBe(true);
    close(claude.cost.usd, (1000 * 2 + 100 * 10 + 2000 * 0.2 + 500 * 2.5) / 1e6);
    harness.server.script([{ text: 'ok', usage: { input: 1000, output: 100, cacheRead: 400 } }]);
    const gpt = (await run(openai(), [])).envelope;
    expect(gpt.model).toBe('gpt-5.4');
    close(gpt.cost.usd, (600 * 2.5 + 400 * 0.25 + 100 * 15) / 1e6);
  });

  test('config prices override a shipped one; the default model without usage stays unknown', async () => {
    await writeConfig(harness.dirs, { prices: { 'anthropic/claude-sonnet-5-5': { input: 1, output: 1, cacheRead: 1, cacheWrite: 1 } } });
    harness.server.script([{ text: 'ok', usage: { input: 1_000_000, output: 1_000_000 } }]);
    expect((await run(anthropic(), [])).envelope.cost).toEqual({ usd: 2, estimated: false });
    harness.server.script([{ text: 'ok', usage: null }]);
    expect((await run(anthropic(), [])).envelope.cost).toBeNull();
  });

  test('a price from config is the user’s own figure: estimated false', async () => {
    await writeConfig(harness.dirs, { prices: { 'anthropic/house-model': { input: 1, output: 2 } } });
    harness.server.script([{ text: 'ok', usage: { input: 1_000_000, output: 1_000_000 } }]);
    const { envelope } = await run(anthropic(), ['--model', 'anthropic/house-model']);
    expect(envelope.cost).toEqual({ usd: 3, estimated: false });
  });

  test('null when any figure is unknown: a model without a price, a call without usage, a cache read without a cache price', async () => {
    harness.server.script([{ text: 'ok' }]);
    expect((await run(anthropic(), ['--model', 'anthropic/house-model'])).envelope.cost).toBeNull();
    harness.server.script([{ text: 'ok', usage: null }]);
    expect((await run(anthropic(), ['--model', 'anthropic/claude-sonnet-4-5'])).envelope.cost).toBeNull();
    await writeConfig(harness.dirs, { prices: { 'house-model': { input: 1, output: 2 } } });
    harness.server.script([{ text: 'ok', usage: { input: 1, output: 1, cacheRead: 5 } }]);
    expect((await run(anthropic(), ['--model', 'anthropic/house-model'])).envelope.cost).toBeNull();
  });

  test('a call cut off before it reported usage (the run timed out mid-stream) leaves the cost unknown, not $0', async () => {
    harness.server.script([{ text: 'working on it', hangAfterText: true }]);
    const { code, envelope } = await run(anthropic(), ['--model', 'anthropic/claude-sonnet-4-5', '--timeout', '1s']);
    expect(code).toBe(124);
    expect(envelope.usage.inputTokens).toBeNull();
    expect(envelope.cost).toBeNull();
  });

  test('a project config cannot set prices (it could zero them to lift --max-cost)', async () => {
    await mkdir(join(harness.dirs.workspace, '.conch'));
    await writeFile(join(harness.dirs.workspace, '.conch', 'config.json'), JSON.stringify({ prices: { 'house-model': { input: 0, output: 0 } } }));
    harness.server.script([{ text: 'ok' }]);
    const r = await run(anthropic(), ['--model', 'anthropic/house-model']);
    expect(r.envelope.cost).toBeNull();
    expect(r.stderr).toContain('"prices" ignored: only your user config sets model prices');
  });
});

describe('--max-cost and limits.cost_usd', () => {
  // claude-sonnet-4-5: $15 per million output tokens, so each call at the 2000-token limit may cost $0.03 of output.
  const args = ['--model', 'anthropic/claude-sonnet-4-5', '--max-output-tokens', '2000'];
  const spend = { toolCalls: [{ name: 'nothing', arguments: {} }], usage: { input: 0, output: 2000 } };

  test('the run ends as limit_exceeded naming cost_usd before a call the rest of the budget cannot cover', async () => {
    harness.server.script([spend, spend, spend, { text: 'never' }]);
    const { code, envelope } = await run(anthropic(), [...args, '--max-cost', '0.075']);
    expect(code).toBe(4);
    expect(envelope.status).toBe('limit_exceeded');
    expect(envelope.limit).toBe('cost_usd');
    expect(envelope.message).toContain('over the cost limit of $0.075 (limit cost_usd; flag --max-cost)');
    // Two calls ($0.06) were made; the third could have cost another $0.03 and more: it was not started.
    expect(harness.server.requests).toHaveLength(2);
    close(envelope.cost.usd, 0.06);
  });

  test('a budget below the first call’s worst case makes no call at all; from config and --limit too', async () => {
    harness.server.script([{ text: 'never' }]);
    const first = await run(anthropic(), [...args, '--max-cost', '0.02']);
    expect(first.envelope.limit).toBe('cost_usd');
    await writeConfig(harness.dirs, { limits: { cost_usd: 0.02 } });
    expect((await run(anthropic(), args)).envelope.limit).toBe('cost_usd');
    await writeConfig(harness.dirs, {});
    expect((await run(anthropic(), [...args, '--limit', 'cost_usd=0.02'])).envelope.limit).toBe('cost_usd');
    expect(harness.server.requests).toHaveLength(0);
  });

  test('a budget that covers the run lets it complete; a model without a price cannot run under a budget', async () => {
    harness.server.script([{ text: 'ok', usage: { input: 10, output: 10 } }]);
    expect((await run(anthropic(), [...args, '--max-cost', '1'])).envelope.status).toBe('completed');
    const unpriced = await run(anthropic(), ['--model', 'anthropic/house-model', '--max-cost', '1']);
    expect(unpriced.envelope.limit).toBe('cost_usd');
    expect(unpriced.envelope.message).toContain('no price is known for anthropic/house-model');
    // The file is named where it is (XDG_CONFIG_HOME here), as the other messages name it.
    expect(unpriced.envelope.message).toContain(`to your user config (${join(harness.dirs.configHome, 'conch', 'config.json')})`);
    // The message shows the entry to add, and that entry, as written there, lets the run go.
    expect(unpriced.envelope.message).toContain('"prices": { "anthropic/house-model": { "input": 3, "output": 15 } }');
    await writeConfig(harness.dirs, { prices: { 'anthropic/house-model': { input: 3, output: 15 } } });
    harness.server.script([{ text: 'ok', usage: { input: 10, output: 10 } }]);
    expect((await run(anthropic(), ['--model', 'anthropic/house-model', '--max-cost', '1', '--max-output-tokens', '1000'])).envelope.status).toBe('completed');
    await writeConfig(harness.dirs, {});
    expect((await run(anthropic(), ['--max-cost', 'lots'])).code).toBe(2);
  });
});

test('--limit cost_usd takes dollars with a fraction; anything else is a setup error saying so', async () => {
  const bad = await run(anthropicEnv(harness.server.anthropicBaseUrl), ['--limit', 'cost_usd=abc']);
  expect(bad.code).toBe(2);
  expect(bad.envelope.message).toBe('--limit cost_usd=abc: the value must be a number of US dollars ≥ 0, such as 0.50.');
});
