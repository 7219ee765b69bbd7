// A hostile or broken model server cannot make conch buffer without limit: both real SDKs, through
// conch's bounded fetch, against bodies that never end. "Bounded memory" is measured as what the
// server managed to hand to the socket before conch hung up (backpressure stops it otherwise).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createProvider } from '../../src/providers/index.ts';
import { isAbortError } from '../../src/providers/retry.ts';
import { ProviderError, type ModelRequest, type Provider, type StreamHooks } from '../../src/providers/types.ts';
import type { ProviderConfig } from '../../src/config/provider-config.ts';
import { startModelServer, type Flood, type ModelServer } from '../support/model-server.ts';

const MiB = 1024 * 1024;
// Socket buffers and the client's read-ahead hold a few MiB beyond what conch has read.
const SLACK = 24 * MiB;
// If a bound ever stops working, the server stalls here rather than filling the machine.
const CAP = 512 * MiB;

let server: ModelServer;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());

const REQUEST: ModelRequest = { system: '', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [] };

function providerFor(type: ProviderConfig['type'], extra: Partial<ProviderConfig> = {}): Promise<Provider> {
  return createProvider({
    type,
    name: type,
    model: 'test-model',
    apiKey: 'k',
    baseUrl: type === 'anthropic' ? server.anthropicBaseUrl : server.openaiBaseUrl,
    retry: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 5 },
    ...extra,
  });
}

/** Runs one call; a regression shows up as an abort after 30 s instead of a hang or OOM. */
async function call(p: Provider, hooks: Partial<StreamHooks> = {}, signal = AbortSignal.timeout(30_000)) {
  const texts: string[] = [];
  const outcome = await p.stream(REQUEST, { onText: (d) => texts.push(d), ...hooks }, signal).then(
    (value) => ({ value, error: null }),
    (error: unknown) => ({ value: null, error }),
  );
  return { ...outcome, texts };
}

async function flood(p: Provider, f: Flood) {
  server.requests.length = 0;
  server.script([{ flood: { maxBytes: CAP, ...f } }]);
  const before = server.floodedBytes();
  const r = await call(p);
  return { ...r, sent: server.floodedBytes() - before, requests: server.requests.length };
}

function protocolError(e: unknown): ProviderError {
  expect(e).toBeInstanceOf(ProviderError);
  expect((e as ProviderError).code).toBe('provider_protocol');
  return e as ProviderError;
}

describe.each(['anthropic', 'openai'] as const)('%s: bounded responses', (type) => {
  const label = type === 'anthropic' ? 'Anthropic (anthropic)' : 'OpenAI-compatible (openai)';

  test('one SSE line with no line break stops at the event bound (8 MiB by default), not retried', async () => {
    const r = await flood(await providerFor(type), { shape: 'line' });
    const e = protocolError(r.error);
    expect(e.message).toStartWith(`${label}: the model server sent a line longer than 8 MiB; conch stopped reading`);
    expect(r.sent).toBeLessThan(8 * MiB + SLACK);
    expect(r.requests).toBe(1);
  }, 40_000);

  test('short lines that never form an event (no blank line) stop at the event bound', async () => {
    const r = await flood(await providerFor(type), { shape: 'lines' });
    expect(protocolError(r.error).message).toContain('a stream event longer than 8 MiB (no blank line)');
    expect(r.sent).toBeLessThan(8 * MiB + SLACK);
  }, 40_000);

  test('valid but endless contentless events stop at the response bound (64 MiB)', async () => {
    const r = await flood(await providerFor(type), { shape: 'events' });
    expect(protocolError(r.error).message).toContain('more than 64 MiB in one response');
    expect(r.sent).toBeGreaterThan(64 * MiB);
    expect(r.sent).toBeLessThan(64 * MiB + SLACK);
  }, 40_000);

  test('an error body that never ends is cut at 64 KiB', async () => {
    const r = await flood(await providerFor(type), { shape: 'error', status: 400 });
    const e = protocolError(r.error);
    expect(e.message).toContain('an HTTP 400 error body longer than 64 KiB');
    expect(e.status).toBe(400);
    expect(r.sent).toBeLessThan(SLACK);
  }, 40_000);

  test('an endless body on a retryable status (503) is not retried', async () => {
    const r = await flood(await providerFor(type), { shape: 'error', status: 503 });
    expect(protocolError(r.error).message).toContain('an HTTP 503 error body longer than 64 KiB');
    expect(r.requests).toBe(1);
  }, 40_000);

  test('modelOutputBytes scales the event bound: a 1.5 MiB delta fails at 512 KiB, passes at 1 MiB', async () => {
    const big = 'A'.repeat(1.5 * MiB);
    server.script([{ text: [big] }]);
    const small = await call(await providerFor(type, { modelOutputBytes: 512 * 1024 }));
    expect(protocolError(small.error).message).toContain('a line longer than 1 MiB');
    expect(small.texts).toEqual([]);

    server.script([{ text: [big] }]);
    const ok = await call(await providerFor(type, { modelOutputBytes: MiB }));
    expect(ok.error).toBeNull();
    expect(ok.value?.text.length).toBe(big.length);
  }, 40_000);

  test('many events that add up past the event bound stream through intact', async () => {
    const deltas = Array.from({ length: 3000 }, (_, i) => `${i}:${'x'.repeat(1000)}\n`);
    server.script([{ text: deltas }]);
    const r = await call(await providerFor(type, { modelOutputBytes: 256 * 1024 }));
    expect(r.error).toBeNull();
    expect(r.texts).toEqual(deltas);
  }, 40_000);

  test('abort still ends a stalled flood as an abort', async () => {
    server.script([{ flood: { shape: 'line', maxBytes: MiB / 2 } }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const r = await call(await providerFor(type), {}, ac.signal);
    expect(isAbortError(r.error)).toBe(true);
  }, 40_000);
});
