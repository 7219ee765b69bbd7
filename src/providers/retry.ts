// Retry and error classification shared by both providers. SDK-agnostic: the provider hands in
// the error classes of the SDK it loaded, so nothing here imports an SDK.
import { delay } from '../core/duration.ts';
import { connectionCode } from '../core/connection-error.ts';
import { ProviderError, type StreamHooks } from './types.ts';
import type { RetryPolicy } from '../config/provider-config.ts';

/** The error classes both official SDKs export under the same names. */
export interface SdkErrorClasses {
  APIError: abstract new (...args: never[]) => Error;
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIUserAbortError: abstract new (...args: never[]) => Error;
}

export interface RetryContext {
  /** Provider display name, used in messages. */
  provider: string;
  /** What the user should set to fix auth, e.g. "ANTHROPIC_API_KEY (or providers.x.apiKey in config)". */
  credentialHint: string;
  /** The base URL the user configured (a local server): a connection failure names it, as the fix is there. */
  endpoint?: string;
  /** What to check when the server answers 404 (common.ts notFoundHint). */
  notFoundHint?: string;
  sdk: SdkErrorClasses;
}

/** Thrown by a provider when a stream ends before its terminal event: the connection was lost. */
export class StreamInterruptedError extends Error {
  constructor(message = 'the response stream ended before the model finished') {
    super(message);
    this.name = 'StreamInterruptedError';
  }
}

export type Failure =
  | { kind: 'retryable'; reason: string; status?: number; retryAfterMs: number | null }
  | { kind: 'fatal'; error: ProviderError };

export function isAbortError(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const name = (e as { name?: unknown }).name;
  return name === 'AbortError' || name === 'APIUserAbortError' || e.constructor?.name === 'APIUserAbortError';
}

/** The error the providers throw when the run's signal aborts a call. */
export function abortError(signal?: AbortSignal): Error {
  const e = new Error('the model call was aborted', { cause: signal?.reason });
  e.name = 'AbortError';
  return e;
}

/** Exponential backoff with "equal jitter": the delay lies in [base/2, base], base doubling per attempt. */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base / 2 + random() * (base / 2));
}

type HeaderSource = Headers | Record<string, string | undefined> | undefined | null;

function header(h: HeaderSource, name: string): string | null {
  if (!h) return null;
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name);
  const rec = h as Record<string, string | undefined>;
  return rec[name] ?? rec[name.toLowerCase()] ?? null;
}

/**
 * The server's requested wait in ms from `retry-after-ms` or `retry-after` (seconds or an HTTP
 * date), or null when absent or unparseable. `now` is injectable for tests.
 */
export function parseRetryAfter(h: HeaderSource, now: number = Date.now()): number | null {
  const ms = header(h, 'retry-after-ms');
  if (ms != null && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return Math.round(n);
  }
  const ra = header(h, 'retry-after');
  if (ra == null || ra.trim() === '') return null;
  const secs = Number(ra);
  if (Number.isFinite(secs)) return secs >= 0 ? Math.round(secs * 1000) : null;
  const date = Date.parse(ra);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

/** Longest server message shown; an error body (up to 64 KiB, bounded-fetch.ts) may be a whole HTML page. */
const MAX_SERVER_MESSAGE = 2000;

/** The human message a server put in its error body, whichever protocol's shape it used. */
function serverMessage(e: Error): string {
  const body = (e as { error?: unknown }).error as Record<string, unknown> | undefined;
  const nested = body && typeof body.error === 'object' && body.error ? (body.error as Record<string, unknown>) : undefined;
  const msg = nested?.message ?? body?.message;
  const text = typeof msg === 'string' && msg !== '' ? msg : e.message;
  return text.length > MAX_SERVER_MESSAGE ? `${text.slice(0, MAX_SERVER_MESSAGE)}… (${text.length - MAX_SERVER_MESSAGE} more characters cut)` : text;
}

/** A ProviderError raised inside the SDK's fetch (bounded-fetch.ts) comes back as the cause of its connection error. */
function raisedInFetch(e: unknown): ProviderError | null {
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 4; depth++) {
    if (cur instanceof ProviderError) return cur;
    cur = (cur as { cause?: unknown }).cause;
  }
  return null;
}

/** Maps a failed attempt to retryable or fatal; returns null for errors that are bugs (rethrown as-is). */
export function classifyError(e: unknown, ctx: RetryContext): Failure | null {
  const { provider, sdk } = ctx;
  const own = raisedInFetch(e);
  if (own) return { kind: 'fatal', error: own };
  if (e instanceof StreamInterruptedError) return { kind: 'retryable', reason: e.message, retryAfterMs: null };
  if (e instanceof sdk.APIConnectionError) {
    const code = connectionCode(e);
    const to = ctx.endpoint ? `connection to ${ctx.endpoint} failed` : 'connection failed';
    return { kind: 'retryable', reason: code ? `${to} (${code})` : `${to}: ${e.message}`, retryAfterMs: null };
  }
  if (e instanceof sdk.APIError) {
    const status = (e as { status?: unknown }).status;
    const msg = serverMessage(e);
    if (typeof status !== 'number') {
      // An error event inside a 200 stream (e.g. Anthropic `overloaded_error`): the server failed mid-response.
      return { kind: 'retryable', reason: `the server reported an error mid-stream: ${msg}`, retryAfterMs: null };
    }
    if (status === 401 || status === 403) {
      const what = status === 401 ? 'rejected the API key' : 'refused access with this API key';
      return {
        kind: 'fatal',
        error: new ProviderError(
          'provider_auth',
          `${provider} ${what} (HTTP ${status}: ${msg}). Set ${ctx.credentialHint} to a valid key.`,
          status,
        ),
      };
    }
    if (status === 408 || status === 409 || status === 429 || status >= 500) {
      const retryAfterMs = parseRetryAfter((e as { headers?: HeaderSource }).headers);
      return { kind: 'retryable', reason: `HTTP ${status}: ${msg}`, status, retryAfterMs };
    }
    const said = status === 404 && ctx.notFoundHint ? `${msg.replace(/\.$/, '')}. ${ctx.notFoundHint}` : msg;
    return {
      kind: 'fatal',
      error: new ProviderError('provider_rejected', `${provider} rejected the request (HTTP ${status}): ${said}`, status),
    };
  }
  if (e instanceof SyntaxError) {
    return {
      kind: 'fatal',
      error: new ProviderError('provider_protocol', `${provider} sent a malformed stream event: ${e.message}`),
    };
  }
  const code = connectionCode(e);
  if (code) return { kind: 'retryable', reason: `connection lost (${code})`, retryAfterMs: null };
  return null;
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, signal, () => abortError(signal));
}

/** Tracks whether an attempt has delivered anything to the caller's hooks. */
export interface Attempt {
  hooks: StreamHooks;
  readonly delivered: boolean;
}

function trackingHooks(hooks: StreamHooks): Attempt {
  const state = {
    delivered: false,
    hooks: {
      onText(delta: string) {
        state.delivered = true;
        hooks.onText(delta);
      },
      onThinking(delta: string) {
        state.delivered = true;
        hooks.onThinking?.(delta);
      },
      onToolArgumentDelta(index: number, delta: string) {
        state.delivered = true;
        hooks.onToolArgumentDelta?.(index, delta);
      },
    } satisfies StreamHooks,
  };
  return state;
}

/**
 * Runs `call` until it succeeds, retrying transient failures with backoff. Output already handed
 * to hooks cannot be taken back, so a failure after any delivery is final.
 */
export async function withRetry<T>(
  policy: RetryPolicy,
  ctx: RetryContext,
  hooks: StreamHooks,
  signal: AbortSignal,
  call: (attempt: Attempt) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) throw abortError(signal);
    const tracked = trackingHooks(hooks);
    try {
      return await call(tracked);
    } catch (e) {
      if (signal.aborted || isAbortError(e)) throw abortError(signal);
      const failure = classifyError(e, ctx);
      if (!failure) throw e;
      if (failure.kind === 'fatal') throw failure.error;
      if (tracked.delivered) {
        throw new ProviderError(
          'provider_unavailable',
          `${ctx.provider} failed after the answer had started streaming, so it was not retried: ${failure.reason}`,
          failure.status,
        );
      }
      if (attempt > policy.maxRetries) {
        const tries = attempt === 1 ? '1 attempt' : `${attempt} attempts`;
        throw new ProviderError(
          'provider_unavailable',
          `${ctx.provider} is unavailable: gave up after ${tries}; last error: ${failure.reason}`,
          failure.status,
        );
      }
      const delayMs =
        failure.retryAfterMs != null
          ? Math.min(failure.retryAfterMs, policy.maxDelayMs)
          : backoffDelay(attempt, policy);
      hooks.onRetry?.({ attempt, delayMs, reason: failure.reason });
      await sleep(delayMs, signal);
    }
  }
}
