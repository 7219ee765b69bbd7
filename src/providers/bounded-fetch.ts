// A fetch for the SDK clients that bounds what a model server can make conch hold. The SDKs buffer
// an SSE event until its blank line and an error body until it ends, with no cap: a hostile or
// broken server (a project config may name any base URL) could grow conch until it runs out of
// memory. The model_output_bytes limit counts parsed deltas only, so it never sees such bytes.
// Bodies still stream chunk by chunk; nothing here buffers a successful response.
import { Buffer } from 'node:buffer';
import { ProviderError } from './types.ts';
import { formatBytes, meteredBody, replaceBody, type StreamBounds } from '../core/bounded-body.ts';

export { formatBytes };

const KiB = 1024;
const MiB = 1024 * KiB;

/** Mirrors the default limits.model_output_bytes, for a ProviderConfig that does not pass its own. */
const DEFAULT_MODEL_OUTPUT_BYTES = 4 * MiB;

export interface ResponseBounds extends StreamBounds {
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
