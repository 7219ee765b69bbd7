// A response body that bounds what a server can make conch hold while the SDK reading it buffers:
// an SSE event until its blank line, a JSON body until it ends, with no cap of their own. Shared by
// the model providers (providers/bounded-fetch.ts) and MCP over HTTP (mcp/http.ts). Chunks still
// pass through as they arrive; nothing here buffers.
import { Buffer } from 'node:buffer';

const KiB = 1024;
const MiB = 1024 * KiB;

export interface StreamBounds {
  /** Bytes of one line, and of one SSE event (bytes since the last blank line). */
  eventBytes: number;
  /** Raw bytes of one response. */
  totalBytes: number;
}

export function formatBytes(n: number): string {
  if (n % MiB === 0) return `${n / MiB} MiB`;
  if (n % KiB === 0) return `${n / KiB} KiB`;
  return `${n} bytes`;
}

/** The response with `body` in place of its own. */
export function replaceBody(response: Response, body: Uint8Array | ReadableStream<Uint8Array>): Response {
  const out = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  Object.defineProperty(out, 'url', { value: response.url });
  return out;
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
export function meteredBody(
  body: ReadableStream<Uint8Array>,
  bounds: StreamBounds,
  fail: (what: string) => Error,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let total = 0;
  let line = 0;
  let event = 0;
  // The last bytes of the previous chunk: a boundary may straddle two chunks.
  let tail = new Uint8Array(0);

  const measure = (chunk: Uint8Array): Error | null => {
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
