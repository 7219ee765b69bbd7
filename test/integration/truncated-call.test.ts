// A tool call cut off at the output-token limit: both providers' wire signals (Anthropic
// stop_reason max_tokens, OpenAI finish_reason length) reach the model as "cut off, retry smaller",
// not as a JSON syntax error it cannot act on. Driven through the real SDKs.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Type } from 'typebox';
import { runTask } from '../../src/agent/loop.ts';
import { DEFAULT_LIMITS } from '../../src/core/limits.ts';
import { Catalog, checkToolDefinition } from '../../src/tools/catalog.ts';
import { defineTool } from '../../src/tools/define.ts';
import { createProvider } from '../../src/providers/index.ts';
import type { Provider } from '../../src/providers/types.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

const written: string[] = [];
const save = defineTool({
  name: 'save',
  description: 'records its text',
  parameters: Type.Object({ text: Type.String() }),
  execute: ({ text }) => {
    written.push(text);
    return 'saved';
  },
});

async function providerFor(type: 'anthropic' | 'openai'): Promise<Provider> {
  return createProvider({
    type,
    name: type,
    model: 'test-model',
    baseUrl: type === 'anthropic' ? server.anthropicBaseUrl : server.openaiBaseUrl,
    apiKey: 'k',
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 },
  });
}

async function run(provider: Provider) {
  const catalog = new Catalog();
  const checked = checkToolDefinition(save, 'test');
  if (!checked.ok) throw new Error(checked.reason);
  catalog.register(checked.tool);
  return runTask(
    {
      runId: 'r1',
      task: [{ type: 'text', text: 'task' }],
      conversation: [],
      system: 'sys',
      catalog,
      limits: DEFAULT_LIMITS,
      makeContext: (callId, signal, runSignal) => ({
        cwd: '/', signal, runSignal, callId, update() {},
        workspace: { root: '/', resolve: async (p) => p, display: (p) => p },
        exec: async () => { throw new Error('no exec in this test'); },
      }),
      stopOnDeny: false,
      header: { mode: 'restricted', sandbox: 'test' },
    },
    provider,
    { emit() {} },
    new AbortController().signal,
  );
}

/** The text of the tool result conch sent back in the second request, whatever the protocol. */
function toolResultText(type: 'anthropic' | 'openai'): string {
  const messages = server.requests[1]!.body.messages;
  if (type === 'anthropic') return JSON.stringify(messages.at(-1).content[0].content);
  return String(messages.find((m: { role: string }) => m.role === 'tool').content);
}

describe.each(['anthropic', 'openai'] as const)('%s: a tool call cut off at max_tokens', (type) => {
  test('is reported as truncated at the output-token limit, not as invalid JSON, and is not run', async () => {
    const provider = await providerFor(type);
    written.length = 0;
    server.requests.length = 0;
    server.script([
      { text: 'Writing it.', toolCalls: [{ name: 'save', arguments: '{"text": "a very long fi' }], stopReason: 'max_tokens' },
      { text: 'retried smaller' },
    ]);
    const outcome = await run(provider);
    expect(outcome.status).toBe('completed');
    expect(written).toEqual([]);
    const sent = toolResultText(type);
    expect(sent).toContain('output-token limit (max_tokens)');
    expect(sent).toContain('Retry with a smaller call');
    expect(sent).not.toContain('not valid JSON');
  });

  test('complete arguments in a turn that also hit max_tokens still run', async () => {
    const provider = await providerFor(type);
    written.length = 0;
    server.script([{ toolCalls: [{ name: 'save', arguments: { text: 'whole' } }], stopReason: 'max_tokens' }, { text: 'done' }]);
    const outcome = await run(provider);
    expect(outcome.status).toBe('completed');
    expect(written).toEqual(['whole']);
  });

  test('malformed arguments without max_tokens are still a JSON error', async () => {
    const provider = await providerFor(type);
    server.requests.length = 0;
    server.script([{ toolCalls: [{ name: 'save', arguments: '{"text": ' }] }, { text: 'done' }]);
    await run(provider);
    expect(toolResultText(type)).toContain('not valid JSON');
  });
});
