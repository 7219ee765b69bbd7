// What each provider puts on the wire (conversation history, tools, limits, keys), the tolerance of
// the OpenAI-compatible parser, provider setup errors, and lazy SDK loading.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createProvider } from '../../src/providers/index.ts';
import { toOpenAIParams } from '../../src/providers/openai.ts';
import { ProviderError, type Message, type ModelRequest } from '../../src/providers/types.ts';
import type { ProviderConfig } from '../../src/config/provider-config.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

function config(type: 'anthropic' | 'openai', extra: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    type,
    name: type,
    model: 'test-model',
    apiKey: 'k',
    baseUrl: type === 'anthropic' ? server.anthropicBaseUrl : server.openaiBaseUrl,
    retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 },
    ...extra,
  };
}

const PNG = 'iVBORw0KGgo=';
const JPEG = '/9j/4AAQ';
const HISTORY: Message[] = [
  { role: 'user', content: [{ type: 'text', text: 'what is in this picture?' }, { type: 'image', mediaType: 'image/png', data: PNG }] },
  {
    role: 'assistant',
    text: 'Let me look.',
    toolCalls: [
      { id: 't1', name: 'read', arguments: '{"path":"notes.txt"}' },
      { id: 't2', name: 'screenshot', arguments: '{"url": ' },
    ],
  },
  {
    role: 'tool',
    results: [
      { callId: 't1', name: 'read', content: [{ type: 'text', text: 'buy milk' }], isError: false },
      {
        callId: 't2',
        name: 'screenshot',
        content: [{ type: 'text', text: 'arguments are not valid JSON' }, { type: 'image', mediaType: 'image/jpeg', data: JPEG }],
        isError: true,
      },
    ],
  },
  { role: 'assistant', text: '', toolCalls: [{ id: 't3', name: 'read', arguments: '{}' }] },
  { role: 'tool', results: [{ callId: 't3', name: 'read', content: [], isError: false }] },
];
const TOOLS = [{ name: 'read', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } }, additionalProperties: false } }];
const REQUEST: ModelRequest = { system: 'Be brief.', messages: HISTORY, tools: TOOLS };

async function send(cfg: ProviderConfig, request: ModelRequest = REQUEST) {
  server.requests.length = 0;
  server.script([{ text: 'ok' }]);
  const p = await createProvider(cfg);
  await p.stream(request, { onText() {} }, new AbortController().signal);
  expect(server.requests).toHaveLength(1);
  return server.requests[0]!;
}

describe('Anthropic requests', () => {
  test('history: tool_use blocks, tool_result blocks with is_error and images, user images', async () => {
    const { body } = await send(config('anthropic'));
    // Prompt caching (issue 16): the system prompt, the previous request's end and the latest turn carry breakpoints.
    const cached = { cache_control: { type: 'ephemeral' } };
    expect(body.system).toEqual([{ type: 'text', text: 'Be brief.', ...cached }]);
    expect(body.max_tokens).toBe(8192);
    expect(body.tools).toEqual([{ name: 'read', description: 'Read a file', input_schema: TOOLS[0]!.parameters }]);
    const img = (mt: string, data: string) => ({ type: 'image', source: { type: 'base64', media_type: mt, data } });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'what is in this picture?' }, img('image/png', PNG)] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me look.' },
          { type: 'tool_use', id: 't1', name: 'read', input: { path: 'notes.txt' } },
          // Malformed arguments go back as {}: the error result already told the model.
          { type: 'tool_use', id: 't2', name: 'screenshot', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'buy milk' }], is_error: false },
          {
            type: 'tool_result',
            tool_use_id: 't2',
            content: [{ type: 'text', text: 'arguments are not valid JSON' }, img('image/jpeg', JPEG)],
            is_error: true,
            ...cached,
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't3', name: 'read', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't3', is_error: false, ...cached }] },
    ]);
  });

  test('max_tokens comes from the request, else the config', async () => {
    expect((await send(config('anthropic', { maxOutputTokens: 1000 }))).body.max_tokens).toBe(1000);
    const req = { ...REQUEST, maxOutputTokens: 77 };
    expect((await send(config('anthropic', { maxOutputTokens: 1000 }), req)).body.max_tokens).toBe(77);
  });
});

describe('OpenAI-compatible requests', () => {
  test('history: tool_calls, tool messages, tool images in a following user message', async () => {
    const { body } = await send(config('openai'));
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'read', description: 'Read a file', parameters: TOOLS[0]!.parameters } }]);
    const url = (mt: string, data: string) => ({ type: 'image_url', image_url: { url: `data:${mt};base64,${data}` } });
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'what is in this picture?' }, url('image/png', PNG)] },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [
          { id: 't1', type: 'function', function: { name: 'read', arguments: '{"path":"notes.txt"}' } },
          { id: 't2', type: 'function', function: { name: 'screenshot', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'buy milk' },
      {
        role: 'tool',
        tool_call_id: 't2',
        content: 'Error: arguments are not valid JSON\n[image 1 (image/jpeg) follows in the next user message]',
      },
      { role: 'user', content: [{ type: 'text', text: 'Images returned by the tool calls above:' }, url('image/jpeg', JPEG)] },
      { role: 'assistant', content: null, tool_calls: [{ id: 't3', type: 'function', function: { name: 'read', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't3', content: '' },
    ]);
  });

  test('a plain text user turn is a string; no tools and no system means neither is sent', async () => {
    const { body } = await send(config('openai'), { system: '', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] });
    expect(body.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect('tools' in body).toBe(false);
    expect('max_tokens' in body || 'max_completion_tokens' in body).toBe(false);
  });

  test('output limit: max_tokens for compatible servers, max_completion_tokens for OpenAI itself', async () => {
    expect((await send(config('openai', { maxOutputTokens: 500 }))).body.max_tokens).toBe(500);
    const official = toOpenAIParams(config('openai', { baseUrl: undefined, maxOutputTokens: 500 }), REQUEST);
    expect(official.max_completion_tokens).toBe(500);
    expect('max_tokens' in official).toBe(false);
  });

  test('a local server needs no key: a placeholder is sent', async () => {
    const { headers } = await send(config('openai', { apiKey: undefined }));
    expect(headers.authorization).toBe('Bearer not-needed');
  });

  test('missing tool-call ids are generated, missing finish_reason is inferred', async () => {
    server.script([
      { toolCalls: [{ id: '', name: 'read', arguments: { path: 'a' } }, { id: '', name: 'read', arguments: { path: 'b' } }], stopReason: null, usage: null },
      { text: 'done', stopReason: null },
    ]);
    const p = await createProvider(config('openai'));
    const res = await p.stream(REQUEST, { onText() {} }, new AbortController().signal);
    expect(res.toolCalls.map((c) => c.arguments)).toEqual(['{"path":"a"}', '{"path":"b"}']);
    const [a, b] = res.toolCalls.map((c) => c.id);
    expect(a).toMatch(/^call_\w+$/);
    expect(b).toMatch(/^call_\w+$/);
    expect(a).not.toBe(b);
    expect(res.stopReason).toBe('tool_use');
    expect((await p.stream(REQUEST, { onText() {} }, new AbortController().signal)).stopReason).toBe('end_turn');
  });
});

describe('model server without streaming', () => {
  test('answers stream: false with the protocol’s plain JSON, readable by the real SDKs', async () => {
    const turn = { text: 'plain answer', toolCalls: [{ id: 'x1', name: 'read', arguments: { path: 'a' } }], usage: { input: 3, output: 2 } };
    server.script([turn, turn]);
    const { Anthropic } = await import('@anthropic-ai/sdk');
    const a = await new Anthropic({ apiKey: 'k', baseURL: server.anthropicBaseUrl, maxRetries: 0 }).messages.create({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(a.content).toEqual([
      { type: 'text', text: 'plain answer' },
      { type: 'tool_use', id: 'x1', name: 'read', input: { path: 'a' } },
    ] as typeof a.content);
    expect(a.stop_reason).toBe('tool_use');
    expect(a.usage).toMatchObject({ input_tokens: 3, output_tokens: 2 });
    const { OpenAI } = await import('openai');
    const o = await new OpenAI({ apiKey: 'k', baseURL: server.openaiBaseUrl, maxRetries: 0 }).chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(o.choices[0]!.message.content).toBe('plain answer');
    expect(o.choices[0]!.message.tool_calls).toEqual([{ id: 'x1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } }]);
    expect(o.choices[0]!.finish_reason).toBe('tool_calls');
    expect(o.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
  });
});

describe('provider setup', () => {
  test('no key and no base URL is provider_auth naming where to put one', async () => {
    for (const type of ['anthropic', 'openai'] as const) {
      const e = await createProvider(config(type, { apiKey: undefined, baseUrl: undefined })).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ProviderError);
      expect((e as ProviderError).code).toBe('provider_auth');
      expect((e as ProviderError).message).toContain(type === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY');
    }
    const named = await createProvider(config('openai', { name: 'openrouter', apiKey: undefined, baseUrl: undefined })).catch((x: unknown) => x);
    expect((named as ProviderError).message).toContain('providers.openrouter.apiKey');
  });

  test('only the SDK the run uses is loaded, and only when the provider is created', async () => {
    const script = `
      const sdks = () => [...new Set(Object.keys(require.cache)
        .map((k) => /node_modules\\/(@anthropic-ai\\/sdk|openai)\\//.exec(k)?.[1]).filter(Boolean))];
      const { createProvider } = await import(${JSON.stringify(new URL('../../src/providers/index.ts', import.meta.url).pathname)});
      const before = sdks();
      await createProvider({ type: 'anthropic', name: 'anthropic', model: 'm', apiKey: 'k', retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 } });
      console.log(JSON.stringify({ before, after: sdks() }));`;
    const proc = Bun.spawnSync([process.execPath, '-e', script], { stderr: 'pipe' });
    expect(proc.stderr.toString()).toBe('');
    expect(JSON.parse(proc.stdout.toString())).toEqual({ before: [], after: ['@anthropic-ai/sdk'] });
  });
});
