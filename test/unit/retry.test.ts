import { describe, expect, test } from 'bun:test';
import * as anthropicSdk from '@anthropic-ai/sdk';
import * as openaiSdk from 'openai';
import {
  StreamInterruptedError,
  backoffDelay,
  classifyError,
  isAbortError,
  parseRetryAfter,
  withRetry,
  type RetryContext,
} from '../../src/providers/retry.ts';
import { ProviderError } from '../../src/providers/types.ts';
import type { RetryPolicy } from '../../src/config/provider-config.ts';

const policy: RetryPolicy = { maxRetries: 3, initialDelayMs: 100, maxDelayMs: 1000 };
const ctxFor = (sdk: RetryContext['sdk']): RetryContext => ({ provider: 'TestProvider', credentialHint: 'TEST_API_KEY', sdk });
const anthropicCtx = ctxFor(anthropicSdk);
const openaiCtx = ctxFor(openaiSdk);

function httpError(sdk: typeof anthropicSdk | typeof openaiSdk, status: number, headers: Record<string, string> = {}, message = 'server says no') {
  // Each protocol's real error body, as the SDK's client hands it to generate().
  const body = sdk === anthropicSdk ? { type: 'error', error: { type: 'x', message } } : { error: { message, type: 'x' } };
  return sdk.APIError.generate(status, body, undefined, new Headers(headers));
}

describe('backoffDelay', () => {
  test('doubles per attempt, with jitter between half and all of the base', () => {
    expect(backoffDelay(1, policy, () => 0)).toBe(50);
    expect(backoffDelay(1, policy, () => 1)).toBe(100);
    expect(backoffDelay(2, policy, () => 1)).toBe(200);
    expect(backoffDelay(3, policy, () => 0.5)).toBe(300); // base 400: 200 + 0.5 * 200
    expect(backoffDelay(4, policy, () => 1)).toBe(800);
  });
  test('is capped at maxDelayMs', () => {
    expect(backoffDelay(5, policy, () => 1)).toBe(1000);
    expect(backoffDelay(30, policy, () => 1)).toBe(1000);
    expect(backoffDelay(30, policy, () => 0)).toBe(500);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  test('seconds, fractional seconds and zero', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after': '0.25' }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': '0' }), now)).toBe(0);
  });
  test('an HTTP date, relative to now; a past date means no wait', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now)).toBe(7000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }), now)).toBe(0);
  });
  test('retry-after-ms wins over retry-after', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), now)).toBe(1500);
  });
  test('absent, negative or garbage gives null; plain header records work too', () => {
    expect(parseRetryAfter(new Headers(), now)).toBeNull();
    expect(parseRetryAfter(new Headers({ 'retry-after': '-3' }), now)).toBeNull();
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter({ 'retry-after': '3' }, now)).toBe(3000);
  });
});

describe('classifyError', () => {
  for (const [label, sdk, ctx] of [
    ['anthropic', anthropicSdk, anthropicCtx],
    ['openai', openaiSdk, openaiCtx],
  ] as const) {
    test(`${label}: 401 and 403 are provider_auth naming what to set`, () => {
      for (const status of [401, 403]) {
        const f = classifyError(httpError(sdk, status), ctx);
        expect(f?.kind).toBe('fatal');
        if (f?.kind !== 'fatal') continue;
        expect(f.error.code).toBe('provider_auth');
        expect(f.error.status).toBe(status);
        expect(f.error.message).toContain('TEST_API_KEY');
        expect(f.error.message).toContain('server says no');
      }
    });
    test(`${label}: 400/404/413/422 are provider_rejected with the server's message`, () => {
      for (const status of [400, 404, 413, 422]) {
        const f = classifyError(httpError(sdk, status, {}, `bad thing ${status}`), ctx);
        expect(f?.kind === 'fatal' && f.error.code).toBe('provider_rejected');
        expect(f?.kind === 'fatal' && f.error.message).toContain(`bad thing ${status}`);
      }
    });
    test(`${label}: 408/409/429/5xx/529 are retryable, carrying retry-after`, () => {
      for (const status of [408, 409, 429, 500, 502, 503, 529]) {
        const f = classifyError(httpError(sdk, status, { 'retry-after': '3' }), ctx);
        expect(f).toMatchObject({ kind: 'retryable', status, retryAfterMs: 3000 });
      }
      expect(classifyError(httpError(sdk, 503), ctx)).toMatchObject({ kind: 'retryable', retryAfterMs: null });
    });
    test(`${label}: a very long server message is cut`, () => {
      const f = classifyError(httpError(sdk, 400, {}, 'x'.repeat(10_000)), ctx);
      expect(f?.kind === 'fatal' && f.error.message.length).toBeLessThan(2200);
      expect(f?.kind === 'fatal' && f.error.message).toEndWith('… (8000 more characters cut)');
    });
    test(`${label}: a ProviderError raised in conch's fetch, wrapped as a connection error, is fatal as itself`, () => {
      const own = new ProviderError('provider_protocol', 'the model server sent a line longer than 8 MiB', 400);
      expect(classifyError(new sdk.APIConnectionError({ message: 'Connection error.', cause: own }), ctx)).toEqual({ kind: 'fatal', error: own });
    });
    test(`${label}: connection errors and in-stream error events are retryable`, () => {
      const conn = new sdk.APIConnectionError({ message: 'Connection error.', cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) });
      expect(classifyError(conn, ctx)).toMatchObject({ kind: 'retryable', reason: 'connection failed (ECONNREFUSED)' });
      const midStream = new sdk.APIError(undefined, { type: 'error', error: { message: 'Overloaded' } }, undefined, new Headers());
      const f = classifyError(midStream, ctx);
      expect(f?.kind).toBe('retryable');
      expect(f?.kind === 'retryable' && f.reason).toContain('mid-stream');
    });
  }
  test('malformed stream data is provider_protocol; our own errors pass through; bugs are not classified', () => {
    expect(classifyError(new SyntaxError('Unexpected EOF'), openaiCtx)).toMatchObject({ kind: 'fatal', error: { code: 'provider_protocol' } });
    const own = new ProviderError('provider_protocol', 'mine');
    expect(classifyError(own, openaiCtx)).toEqual({ kind: 'fatal', error: own });
    expect(classifyError(new StreamInterruptedError(), openaiCtx)?.kind).toBe('retryable');
    const reset = new TypeError('The socket connection was closed unexpectedly');
    expect(classifyError(Object.assign(reset, { code: 'ECONNRESET' }), openaiCtx)?.kind).toBe('retryable');
    expect(classifyError(new TypeError('undefined is not a function'), openaiCtx)).toBeNull();
  });
});

describe('isAbortError', () => {
  test('recognises DOM aborts and the SDKs’ user-abort errors only', () => {
    expect(isAbortError(new DOMException('x', 'AbortError'))).toBe(true);
    expect(isAbortError(new anthropicSdk.APIUserAbortError())).toBe(true);
    expect(isAbortError(new openaiSdk.APIUserAbortError())).toBe(true);
    expect(isAbortError(new Error('AbortError'))).toBe(false);
    expect(isAbortError(new ProviderError('provider_unavailable', 'x'))).toBe(false);
    expect(isAbortError('AbortError')).toBe(false);
  });
});

describe('withRetry', () => {
  const fast: RetryPolicy = { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 5 };
  const noHooks = { onText() {} };

  function scripted(results: (Error | string)[]) {
    let calls = 0;
    const fn = async (attempt: { hooks: { onText(d: string): void } }) => {
      const r = results[calls++];
      if (r instanceof Error) throw r;
      if (r === undefined) throw new Error('test script ran out');
      attempt.hooks.onText(r);
      return r;
    };
    return { fn, calls: () => calls };
  }

  test('retries transient failures, reporting each wait, then returns the result', async () => {
    const retries: { attempt: number; delayMs: number; reason: string }[] = [];
    const s = scripted([httpError(openaiSdk, 503), httpError(openaiSdk, 429, { 'retry-after-ms': '3' }), 'ok']);
    const out = await withRetry(fast, openaiCtx, { onText() {}, onRetry: (r) => retries.push(r) }, new AbortController().signal, s.fn);
    expect(out).toBe('ok');
    expect(s.calls()).toBe(3);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    expect(retries[0]!.reason).toContain('HTTP 503');
    expect(retries[1]!.delayMs).toBe(3);
  });

  test('a retry-after beyond maxDelayMs is capped', async () => {
    const delays: number[] = [];
    const s = scripted([httpError(openaiSdk, 429, { 'retry-after': '3600' }), 'ok']);
    await withRetry(fast, openaiCtx, { onText() {}, onRetry: (r) => delays.push(r.delayMs) }, new AbortController().signal, s.fn);
    expect(delays).toEqual([5]);
  });

  test('exhausted retries become provider_unavailable naming the attempts and the last status', async () => {
    const s = scripted([httpError(openaiSdk, 500), httpError(openaiSdk, 502), httpError(openaiSdk, 529), 'never']);
    const err = await withRetry(fast, openaiCtx, noHooks, new AbortController().signal, s.fn).catch((e) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err.code).toBe('provider_unavailable');
    expect(err.message).toContain('3 attempts');
    expect(err.message).toContain('HTTP 529');
    expect(err.status).toBe(529);
    expect(s.calls()).toBe(3);
  });

  test('fatal errors and bugs are not retried', async () => {
    const auth = scripted([httpError(openaiSdk, 401), 'never']);
    const e1 = await withRetry(fast, openaiCtx, noHooks, new AbortController().signal, auth.fn).catch((e) => e);
    expect(e1.code).toBe('provider_auth');
    expect(auth.calls()).toBe(1);
    const bug = scripted([new TypeError('x is undefined'), 'never']);
    const e2 = await withRetry(fast, openaiCtx, noHooks, new AbortController().signal, bug.fn).catch((e) => e);
    expect(e2).toBeInstanceOf(TypeError);
    expect(bug.calls()).toBe(1);
  });

  test('never retries once output reached the hooks', async () => {
    const seen: string[] = [];
    let calls = 0;
    const err = await withRetry(fast, openaiCtx, { onText: (d) => seen.push(d) }, new AbortController().signal, async (a) => {
      calls++;
      a.hooks.onText('partial');
      throw httpError(openaiSdk, 503);
    }).catch((e) => e);
    expect(calls).toBe(1);
    expect(seen).toEqual(['partial']);
    expect(err.code).toBe('provider_unavailable');
    expect(err.message).toContain('not retried');
  });

  test('an abort during the backoff sleep rejects as an abort, not a ProviderError', async () => {
    const ac = new AbortController();
    const slow: RetryPolicy = { maxRetries: 5, initialDelayMs: 60_000, maxDelayMs: 60_000 };
    const s = scripted([httpError(openaiSdk, 503), 'never']);
    const err = await withRetry(slow, openaiCtx, { onText() {}, onRetry: () => ac.abort() }, ac.signal, s.fn).catch((e) => e);
    expect(isAbortError(err)).toBe(true);
    expect(err).not.toBeInstanceOf(ProviderError);
    expect(s.calls()).toBe(1);
  });

  test('any failure after the signal aborted is reported as an abort', async () => {
    const ac = new AbortController();
    const err = await withRetry(fast, openaiCtx, noHooks, ac.signal, async () => {
      ac.abort();
      throw httpError(openaiSdk, 500);
    }).catch((e) => e);
    expect(isAbortError(err)).toBe(true);
  });
});
