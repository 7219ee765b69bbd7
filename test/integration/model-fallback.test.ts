// The fallback route through the real CLI and SDKs: an Anthropic-protocol server that is overloaded
// and an OpenAI-protocol server that answers. The turn moves on only for failures retries could not
// cure, never after output was shown and never on an auth error; the conversation (tool calls,
// results, images) is translated between protocols; envelope and trace say who answered each turn.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runConch, useHarness, writeConfig } from '../support/cli.ts';
import { startModelServer, type ModelServer, type ScriptedTurn } from '../support/model-server.ts';

// The smallest valid PNG (1×1), so the read tool returns an image block.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

const harness = useHarness(async (dirs) => {
  await writeFile(join(dirs.workspace, 'a.txt'), 'alpha\n');
  await writeFile(join(dirs.workspace, 'dot.png'), PNG);
  await writeConfig(dirs, {
    model: ['anthropic/claude-sonnet-5-5', 'openai/gpt-5.4'],
    retry: { maxRetries: 1, initialDelayMs: 0, maxDelayMs: 0 },
  });
});
let second: ModelServer;
beforeAll(async () => {
  second = await startModelServer();
});
afterAll(() => second.close());

const OVERLOADED: ScriptedTurn = { error: { status: 529, message: 'Overloaded' } };
const env = () => ({
  ANTHROPIC_API_KEY: 'a-key',
  ANTHROPIC_BASE_URL: harness.server.anthropicBaseUrl,
  OPENAI_API_KEY: 'o-key',
  OPENAI_BASE_URL: second.openaiBaseUrl,
});
const anthropicRequests = () => harness.server.requests;
const openaiRequests = () => second.requests;

async function run(args: string[] = [], task = 'read a.txt') {
  second.requests.length = 0;
  const trace = join(harness.dirs.home, 'trace.jsonl');
  const r = await runConch({ dirs: harness.dirs, args: ['--json', '--ephemeral', '--trace', trace, ...args, task], env: env() });
  const events = (await readFile(trace, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  return { ...r, envelope: JSON.parse(r.stdout), events };
}

describe('fallback route', () => {
  test('529 forever on the first model: the run completes on the second, which gets the tool calls and results', async () => {
    harness.server.script(() => OVERLOADED);
    second.script([{ toolCalls: [{ id: 'call_1', name: 'read', arguments: { path: 'a.txt' } }] }, { text: 'it says alpha' }]);
    const { code, envelope, events } = await run();
    expect(code).toBe(0);
    expect(envelope.output).toBe('it says alpha');
    expect(envelope.answeredBy).toEqual(['openai/gpt-5.4', 'openai/gpt-5.4']);
    // One attempt and one retry, then the route moved on and stayed there.
    expect(anthropicRequests()).toHaveLength(2);
    const [, turn2] = openaiRequests().map((q) => q.body);
    expect(turn2.model).toBe('gpt-5.4');
    const assistant = turn2.messages.find((m: any) => m.role === 'assistant');
    expect(assistant.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"path":"a.txt"}' } }]);
    const result = turn2.messages.find((m: any) => m.role === 'tool');
    expect(result.tool_call_id).toBe('call_1');
    expect(result.content).toContain('alpha');
    const fallback = events.filter((e) => e.type === 'model.fallback');
    expect(fallback).toHaveLength(1);
    expect(fallback[0]).toMatchObject({ turn: 1, from: 'anthropic/claude-sonnet-5-5', to: 'openai/gpt-5.4' });
    expect(fallback[0].reason).toContain('HTTP 529');
    expect(events.filter((e) => e.type === 'model.finished').map((e) => e.model)).toEqual(['openai/gpt-5.4', 'openai/gpt-5.4']);
  });

  test('earlier Anthropic turns are translated: tool_use and tool_result (with an image) become tool_calls, tool messages and an image part', async () => {
    const anthropicTurns: ScriptedTurn[] = [
      { thinking: { text: 'look at it', signature: 'SIG' }, toolCalls: [{ id: 'toolu_01', name: 'read', arguments: { path: 'dot.png' } }] },
    ];
    harness.server.script(() => anthropicTurns.shift() ?? OVERLOADED);
    second.script([{ text: 'a dot' }]);
    const { code, envelope } = await run(['--thinking', 'low'], 'what is in dot.png?');
    expect(code).toBe(0);
    expect(envelope.answeredBy).toEqual(['anthropic/claude-sonnet-5-5', 'openai/gpt-5.4']);
    const { messages } = openaiRequests()[0]!.body;
    expect(messages.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(messages[1].content).toBe('what is in dot.png?');
    // Anthropic's signed thinking is not sent to another provider.
    expect(messages[2]).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'read', arguments: '{"path":"dot.png"}' } }] });
    expect(messages[3].tool_call_id).toBe('toolu_01');
    expect(messages[4].content[1]).toEqual({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } });
  });

  test('a 404 model-not-found moves on too; --fallback-model builds the route on the command line', async () => {
    await writeConfig(harness.dirs, { retry: { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0 } });
    harness.server.script(() => ({ error: { status: 404, message: 'model: claude-gone' } }));
    second.script([{ text: 'ok' }]);
    const { code, envelope } = await run(['--model', 'anthropic/claude-gone', '--fallback-model', 'openai/gpt-4o']);
    expect(code).toBe(0);
    expect(envelope.answeredBy).toEqual(['openai/gpt-4o']);
  });

  test('never on an auth error: a wrong key is the user’s to fix', async () => {
    harness.server.script(() => ({ error: { status: 401, message: 'invalid x-api-key' } }));
    second.script([{ text: 'should not be asked' }]);
    const { code, envelope } = await run();
    expect(code).toBe(1);
    expect(envelope.code).toBe('provider_auth');
    expect(openaiRequests()).toHaveLength(0);
  });

  test('never after output of the turn was shown', async () => {
    harness.server.script(() => ({ text: 'Let me start', failMidStream: true }));
    second.script([{ text: 'should not be asked' }]);
    const { code, envelope } = await run();
    expect(code).toBe(1);
    expect(envelope.code).toBe('provider_unavailable');
    expect(openaiRequests()).toHaveLength(0);
  });

  test('the last model of the route failing ends the run as before', async () => {
    harness.server.script(() => OVERLOADED);
    second.script(() => ({ error: { status: 503, message: 'down too' } }));
    const { code, envelope, events } = await run();
    expect(code).toBe(1);
    expect(envelope.code).toBe('provider_unavailable');
    expect(envelope.message).toContain('down too');
    expect(events.filter((e) => e.type === 'model.fallback')).toHaveLength(1);
  });
});

describe('OpenAI → Anthropic', () => {
  test('tool-call ids another protocol allows but Anthropic does not are mapped consistently', async () => {
    await writeConfig(harness.dirs, { model: ['openai/gpt-4o', 'anthropic/claude-sonnet-5-5'], retry: { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0 } });
    const openaiTurns: ScriptedTurn[] = [{ toolCalls: [{ id: 'call.7:x', name: 'read', arguments: { path: 'a.txt' } }] }];
    second.script(() => openaiTurns.shift() ?? { error: { status: 503, message: 'gone' } });
    harness.server.script([{ text: 'done' }]);
    const { code, envelope } = await run();
    expect(code).toBe(0);
    expect(envelope.answeredBy).toEqual(['openai/gpt-4o', 'anthropic/claude-sonnet-5-5']);
    const { messages } = anthropicRequests()[0]!.body;
    expect(messages[1].content[0]).toMatchObject({ type: 'tool_use', id: 'call_7_x', name: 'read', input: { path: 'a.txt' } });
    expect(messages[2].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'call_7_x', is_error: false });
  });
});

test('a fallback model without "provider/" is a setup error naming the flag', async () => {
  const r = await runConch({ dirs: harness.dirs, args: ['--json', '--fallback-model', 'gpt-4o', 'x'], env: env() });
  expect(r.code).toBe(2);
  expect(JSON.parse(r.stdout).message).toContain('--fallback-model "gpt-4o" must be "provider/model"');
});
