// Both providers, through the real SDKs, against the local model server speaking each wire protocol.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createProvider } from '../../src/providers/index.ts';
import { isAbortError } from '../../src/providers/retry.ts';
import { ProviderError, type ModelRequest, type Provider, type StreamHooks } from '../../src/providers/types.ts';
import type { RetryPolicy } from '../../src/config/provider-config.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

const FAST: RetryPolicy = { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 20 };

function providerFor(
  s: ModelServer,
  type: 'anthropic' | 'openai',
  retry: Partial<RetryPolicy> = {},
  requestTimeoutMs?: number,
): Promise<Provider> {
  return createProvider({
    type,
    name: type,
    model: 'test-model',
    apiKey: 'test-key-123',
    baseUrl: type === 'anthropic' ? s.anthropicBaseUrl : s.openaiBaseUrl,
    retry: { ...FAST, ...retry },
    requestTimeoutMs,
  });
}

function recorder(extra: Partial<StreamHooks> = {}) {
  const texts: string[] = [];
  const args: [number, string][] = [];
  const retries: { attempt: number; delayMs: number; reason: string }[] = [];
  const hooks: StreamHooks = {
    onText: (d) => texts.push(d),
    onToolArgumentDelta: (i, d) => args.push([i, d]),
    onRetry: (r) => retries.push(r),
    ...extra,
  };
  return { hooks, texts, args, retries };
}

const REQUEST: ModelRequest = {
  system: 'You are terse.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
  tools: [{ name: 'read', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } } } }],
};

function run(p: Provider, hooks: StreamHooks, signal = new AbortController().signal) {
  return p.stream(REQUEST, hooks, signal);
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const e = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ProviderError);
  return e as ProviderError;
}

describe.each(['anthropic', 'openai'] as const)('%s provider', (type) => {
  let p: Provider;
  beforeAll(async () => {
    p = await providerFor(server, type);
  });
  const fresh = () => {
    server.requests.length = 0;
  };

  test('streams text deltas in order and reports usage and stop reason', async () => {
    fresh();
    server.script([{ text: ['Hel', 'lo', ', ', 'world'], usage: { input: 12, output: 4 } }]);
    const r = recorder();
    const res = await run(p, r.hooks);
    expect(r.texts).toEqual(['Hel', 'lo', ', ', 'world']);
    expect(res).toEqual({
      text: 'Hello, world',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: { inputTokens: 12, outputTokens: 4, cacheReadTokens: null, cacheWriteTokens: null },
      // Issue 16: the response carries the model's reasoning (none here).
      thinking: [],
      thinkingTokens: null,
    });
    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.protocol).toBe(type);
    expect(req.body.stream).toBe(true);
    expect(req.body.model).toBe('test-model');
    expect(JSON.stringify(req.headers)).toContain('test-key-123');
  });

  test('assembles tool calls from chunked argument deltas', async () => {
    server.script([
      {
        text: 'Reading.',
        toolCalls: [
          { id: 'c1', name: 'read', arguments: { path: 'src/main.ts', limit: 20 } },
          { id: 'c2', name: 'grep', arguments: '{"pattern": "TODO", "dir": "src"}' },
        ],
      },
    ]);
    const r = recorder();
    const res = await run(p, r.hooks);
    expect(res.toolCalls).toEqual([
      { id: 'c1', name: 'read', arguments: '{"path":"src/main.ts","limit":20}' },
      { id: 'c2', name: 'grep', arguments: '{"pattern": "TODO", "dir": "src"}' },
    ]);
    expect(res.stopReason).toBe('tool_use');
    // Several deltas per call, attributed to the right call, adding up to the arguments.
    for (const [i, call] of res.toolCalls.entries()) {
      const parts = r.args.filter(([idx]) => idx === i).map(([, d]) => d);
      expect(parts.length).toBeGreaterThan(1);
      expect(parts.join('')).toBe(call.arguments);
    }
  });

  test('keeps malformed argument JSON raw and turns empty arguments into {}', async () => {
    server.script([{ toolCalls: [{ id: 'm1', name: 'read', arguments: '{"path": "a.txt", ' }, { id: 'm2', name: 'now', arguments: '' }] }]);
    const res = await run(p, recorder().hooks);
    expect(res.toolCalls.map((c) => c.arguments)).toEqual(['{"path": "a.txt", ', '{}']);
  });

  test('usage the server does not report is null, never 0', async () => {
    server.script([{ text: 'a', usage: null }, { text: 'b', usage: { input: 7 } }, { text: 'c', usage: { input: 0, output: 0, cacheRead: 3 } }]);
    const none = await run(p, recorder().hooks);
    expect(none.usage).toEqual({ inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null });
    const partial = await run(p, recorder().hooks);
    expect(partial.usage).toEqual({ inputTokens: 7, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null });
    const zeros = await run(p, recorder().hooks);
    expect(zeros.usage).toEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 3, cacheWriteTokens: null });
  });

  test('normalises max_tokens and passes unknown stop reasons through', async () => {
    server.script([{ text: 'cut', stopReason: 'max_tokens' }, { text: 'odd', stopReason: 'content_filter' }]);
    expect((await run(p, recorder().hooks)).stopReason).toBe('max_tokens');
    expect((await run(p, recorder().hooks)).stopReason).toBe('content_filter');
  });

  test('429 with retry-after, then success: onRetry gets the server’s delay', async () => {
    fresh();
    server.script([{ error: { status: 429, retryAfter: '0.015' } }, { text: 'finally' }]);
    const r = recorder();
    const res = await run(p, r.hooks);
    expect(res.text).toBe('finally');
    expect(r.retries).toHaveLength(1);
    expect(r.retries[0]).toMatchObject({ attempt: 1, delayMs: 15 });
    expect(r.retries[0]!.reason).toContain('429');
    expect(server.requests).toHaveLength(2);
  });

  test('500 forever ends as provider_unavailable after every attempt', async () => {
    fresh();
    server.script(() => ({ error: { status: 500, message: 'kaput' } }));
    const r = recorder();
    const e = await failure(run(p, r.hooks));
    expect(e.code).toBe('provider_unavailable');
    expect(e.message).toContain('3 attempts');
    expect(e.message).toContain('HTTP 500');
    expect(e.message).toContain('kaput');
    expect(server.requests).toHaveLength(3);
    expect(r.retries.map((x) => x.attempt)).toEqual([1, 2]);
  });

  test('a server that is not there (a local one not started): the error names the address tried', async () => {
    const gone = await startModelServer();
    await gone.close();
    const lost = await providerFor(gone, type, { maxRetries: 0 });
    const e = await failure(run(lost, recorder().hooks));
    expect(e.code).toBe('provider_unavailable');
    const address = type === 'anthropic' ? gone.anthropicBaseUrl : gone.openaiBaseUrl;
    expect(e.message).toContain(`connection to ${address} failed (ECONNREFUSED)`);
  });

  test('401 is provider_auth naming the key to set, without retrying', async () => {
    fresh();
    server.script([{ error: { status: 401, message: 'invalid x-api-key' } }]);
    const e = await failure(run(p, recorder().hooks));
    expect(e.code).toBe('provider_auth');
    expect(e.message).toContain(type === 'anthropic' ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY');
    expect(e.message).toContain('invalid x-api-key');
    expect(server.requests).toHaveLength(1);
  });

  test('400 is provider_rejected with the server’s message', async () => {
    server.script([{ error: { status: 400, message: 'messages: field required' } }]);
    const e = await failure(run(p, recorder().hooks));
    expect(e.code).toBe('provider_rejected');
    expect(e.message).toContain('messages: field required');
  });

  test('a mid-stream failure after output is final; before output it is retried', async () => {
    fresh();
    server.script([{ text: 'half an answer', failMidStream: true }, { text: 'never sent' }]);
    const r = recorder();
    const e = await failure(run(p, r.hooks));
    expect(e.code).toBe('provider_unavailable');
    expect(r.texts).toEqual(['half ']);
    expect(server.remaining()).toBe(1);

    server.script([{ failMidStream: true }, { text: 'second try' }]);
    const r2 = recorder();
    expect((await run(p, r2.hooks)).text).toBe('second try');
    expect(r2.retries).toHaveLength(1);
  });

  test('a dropped connection is retried; a drop after output is not', async () => {
    server.script([{ dropConnection: true }, { text: 'reconnected' }]);
    const r = recorder();
    expect((await run(p, r.hooks)).text).toBe('reconnected');
    expect(r.retries[0]!.reason).toContain('connection');

    server.script([{ text: 'some words then', dropAfterText: true }, { text: 'never sent' }]);
    const r2 = recorder();
    const e = await failure(run(p, r2.hooks));
    expect(e.code).toBe('provider_unavailable');
    expect(r2.texts.join('')).toBe('some words then');
    expect(server.remaining()).toBe(1);
  });

  test('a malformed stream event is provider_protocol', async () => {
    server.script([{ text: 'x y', malformedEvent: true }]);
    const e = await failure(run(p, recorder().hooks));
    expect(e.code).toBe('provider_protocol');
  });

  test('abort during a hanging stream rejects as an abort', async () => {
    server.script([{ text: 'thinking...', hangAfterText: true }]);
    const ac = new AbortController();
    const r = recorder({ onText: () => setTimeout(() => ac.abort(), 5) });
    const err = await run(p, r.hooks, ac.signal).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    expect(err).not.toBeInstanceOf(ProviderError);
  }, 5000);

  test('abort before the response arrives rejects as an abort', async () => {
    server.script([{ delayMs: 3000, text: 'too late' }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    const err = await run(p, recorder().hooks, ac.signal).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
  }, 2500);

  test('a request that exceeds requestTimeoutMs is retried as a connection failure', async () => {
    const impatient = await providerFor(server, type, {}, 100);
    server.script([{ delayMs: 1000, text: 'slow' }, { text: 'quick' }]);
    const r = recorder();
    expect((await impatient.stream(REQUEST, r.hooks, new AbortController().signal)).text).toBe('quick');
    expect(r.retries).toHaveLength(1);
    expect(r.retries[0]!.reason).toContain('connection');
  });

  test('abort while waiting out a long retry-after rejects as an abort', async () => {
    const slow = await providerFor(server, type, { maxDelayMs: 60_000 });
    server.script([{ error: { status: 529, retryAfter: '60' } }, { text: 'too late' }]);
    const ac = new AbortController();
    const r = recorder({ onRetry: () => ac.abort() });
    const err = await slow.stream(REQUEST, r.hooks, ac.signal).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    expect(server.remaining()).toBe(1);
  }, 5000);

  test('an exhausted script fails loudly', async () => {
    server.script([]);
    const e = await failure(run(p, recorder().hooks));
    expect(e.message).toContain('script ran out');
  });
});
