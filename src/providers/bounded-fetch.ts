// A fetch for the SDK clients that bounds what a model server can make conch hold. The SDKs buffer
// an SSE event until its blank line and an error body until it ends, with no cap: a hostile or
// broken server (a project config may name any base URL) could grow conch until it runs out of
// memory. The model_output_bytes limit counts parsed deltas only, so it never sees such bytes.
// Bodies still stream chunk by chunk; nothing here buffers a successful response.
import { Buffer } from 'node:buffer';
import { ProviderError } from './types.ts';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Mirrors the default limits.model_output_bytes, for a ProviderConfig that does not pass its own. */
const DEFAULT_MODEL_OUTPUT_BYTES = 4 * MiB;

export interface ResponseBounds {
  /** Bytes of one SSE event (bytes since the last blank line): what the SDK's decoders buffer. */
  eventBytes: number;
  /** Raw bytes of one successful response. */
  totalBytes: number;
  /** Bytes of an error response's body. */
  errorBodyBytes: number;
}

/**
 * Bounds derived from the run's model-output limit. One event carries one delta, which is at most
 * the whole output plus JSON escaping. Raw framing is verbose: per-token deltas of OpenAI-style
 * streams are ~200 bytes for a few bytes of text, so the total allows far more than the output.
 */
export function responseBounds(modelOutputBytes?: number): ResponseBounds {
  const out = modelOutputBytes !== undefined && Number.isFinite(modelOutputBytes) && modelOutputBytes > 0
    ? modelOutputBytes
    : DEFAULT_MODEL_OUTPUT_BYTES;
  return {
    eventBytes: Math.max(1 * MiB, 2 * out),
    totalBytes: Math.max(64 * MiB, 16 * out),
    errorBodyBytes: 64 * KiB,
  };
}

export function formatBytes(n: number): string {
  if (n % MiB === 0) return `${n / MiB} MiB`;
  if (n % KiB === 0) return `${n / KiB} KiB`;
  return `${n} bytes`;
}

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** `provider` names the provider in error messages, e.g. "Anthropic (anthropic)". */
export function boundedFetch(bounds: ResponseBounds, provider: string, inner: Fetch = (i, o) => fetch(i, o)): Fetch {
  const fail = (what: string, status?: number) =>
    new ProviderError(
      'provider_protocol',
      `${provider}: the model server sent ${what}; conch stopped reading the response. ` +
        'Check that the base URL points at a real model server.',
      status,
    );
  return async (input, init) => {
    const response = await inner(input, init);
    if (!response.body) return response;
    if (!response.ok) {
      const body = await readErrorBody(response.body, bounds.errorBodyBytes);
      if (body === null) {
        throw fail(`an HTTP ${response.status} error body longer than ${formatBytes(bounds.errorBodyBytes)}`, response.status);
      }
      return replaceBody(response, body);
    }
    // A web UI on that port or a proxy's login page answers 200 with HTML, which the SDKs read as an
    // empty stream ("no completion chunks", or retried as a stream that ended early).
    if (/^\s*text\/html\b/i.test(response.headers.get('content-type') ?? '')) {
      response.body.cancel().catch(() => {});
      const url = response.url || (input instanceof Request ? input.url : String(input));
      throw new ProviderError(
        'provider_protocol',
        `${provider}: ${url} answered with a web page (text/html), not the model API. Check that the base URL points at the model server's API (for Ollama, http://localhost:11434/v1), not a web UI or a proxy's login page.`,
        response.status,
      );
    }
    return replaceBody(response, meteredBody(response.body, bounds, fail));
  };
}

function replaceBody(response: Response, body: Uint8Array | ReadableStream<Uint8Array>): Response {
  const out = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(out, 'url', { value: response.url });
  return out;
}

/** The whole error body, or null (and the connection dropped) once it passes `limit`. */
async function readErrorBody(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | null> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks, size);
    size += value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
}

// What ends an SSE event for the SDKs' decoders: a blank line in any of the three line endings.
const BOUNDARIES = [Buffer.from('\n\n'), Buffer.from('\r\r'), Buffer.from('\r\n\r\n')];

/** The offset just past the last event boundary in `bytes`, or -1. */
function lastBoundaryEnd(bytes: Uint8Array): number {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (const b of BOUNDARIES) {
    const at = view.lastIndexOf(b);
    if (at >= 0) end = Math.max(end, at + b.length);
  }
  return end;
}

/**
 * Passes chunks through as they arrive, counting: bytes since the last line break, since the last
 * blank line, and in total. Crossing a bound errors the stream (the SDK rethrows that error from
 * its iterator) and cancels the underlying body, which drops the connection.
 */
function meteredBody(
  body: ReadableStream<Uint8Array>,
  bounds: ResponseBounds,
  fail: (what: string) => ProviderError,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let total = 0;
  let line = 0;
  let event = 0;
  // The last bytes of the previous chunk: a boundary may straddle two chunks.
  let tail = new Uint8Array(0);

  const measure = (chunk: Uint8Array): ProviderError | null => {
    const n = chunk.byteLength;
    total += n;
    const lastBreak = Math.max(chunk.lastIndexOf(10), chunk.lastIndexOf(13));
    line = lastBreak < 0 ? line + n : n - 1 - lastBreak;
    let end = lastBoundaryEnd(chunk);
    if (end < 0 && tail.length > 0) {
      const head = chunk.subarray(0, 3);
      const joint = new Uint8Array(tail.length + head.length);
      joint.set(tail);
      joint.set(head, tail.length);
      const jointEnd = lastBoundaryEnd(joint);
      if (jointEnd > tail.length) end = jointEnd - tail.length;
    }
    event = end < 0 ? event + n : n - end;
    tail = chunk.slice(Math.max(0, n - 3));
    if (line > bounds.eventBytes) return fail(`a line longer than ${formatBytes(bounds.eventBytes)}`);
    if (event > bounds.eventBytes) return fail(`a stream event longer than ${formatBytes(bounds.eventBytes)} (no blank line)`);
    if (total > bounds.totalBytes) return fail(`more than ${formatBytes(bounds.totalBytes)} in one response`);
    return null;
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A rejected read (the request aborted, the connection lost) errors this stream with the same reason.
      const { done, value } = await reader.read();
      if (done) return controller.close();
      const problem = measure(value);
      if (problem) {
        controller.error(problem);
        reader.cancel(problem).catch(() => {});
        return;
      }
      controller.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
