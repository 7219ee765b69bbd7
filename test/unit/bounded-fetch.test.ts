// The byte counting of the SDK clients' fetch, on real Response bodies split into chosen chunks
// (the integration tests in providers-bounds.test.ts drive it through both SDKs).
import { describe, expect, test } from 'bun:test';
import { boundedFetch, formatBytes, responseBounds, type ResponseBounds } from '../../src/providers/bounded-fetch.ts';
import { ProviderError } from '../../src/providers/types.ts';

const enc = new TextEncoder();
const MiB = 1024 * 1024;

function bodyOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      const next = chunks[i++];
      if (next === undefined) return c.close();
      c.enqueue(typeof next === 'string' ? enc.encode(next) : next);
    },
  });
}

/** Reads the bounded body to the end: its text, or the error that ended it. */
async function through(bounds: ResponseBounds, chunks: (string | Uint8Array)[], status = 200) {
  const f = boundedFetch(bounds, 'P', async () => new Response(bodyOf(chunks), { status, headers: { 'x-test': 'kept' } }));
  try {
    const res = await f('http://model.invalid/');
    return { res, text: await res.text(), error: null };
  } catch (error) {
    return { res: null, text: null, error: error as Error };
  }
}

const small: ResponseBounds = { eventBytes: 100, totalBytes: 10_000, errorBodyBytes: 50 };

describe('responseBounds', () => {
  test('defaults follow the 4 MiB model-output default; bounds scale with a larger limit', () => {
    expect(responseBounds()).toEqual({ eventBytes: 8 * MiB, totalBytes: 64 * MiB, errorBodyBytes: 64 * 1024 });
    expect(responseBounds(16 * MiB)).toMatchObject({ eventBytes: 32 * MiB, totalBytes: 256 * MiB });
    expect(responseBounds(1024)).toMatchObject({ eventBytes: MiB, totalBytes: 64 * MiB });
    expect(responseBounds(0)).toEqual(responseBounds());
    expect(responseBounds(Number.POSITIVE_INFINITY)).toEqual(responseBounds());
  });
  test('formatBytes', () => {
    expect([formatBytes(8 * MiB), formatBytes(64 * 1024), formatBytes(1000)]).toEqual(['8 MiB', '64 KiB', '1000 bytes']);
  });
});

describe('event counting', () => {
  const event = 'data: ' + 'x'.repeat(60); // 66 bytes: two events without a boundary exceed 100
  for (const [name, eol] of [['\\n\\n', '\n\n'], ['\\r\\r', '\r\r'], ['\\r\\n\\r\\n', '\r\n\r\n']] as const) {
    test(`a ${name} boundary resets the count, also when split across chunks at any point`, async () => {
      for (let cut = 0; cut <= eol.length; cut++) {
        const chunks = Array.from({ length: 50 }, () => [event + eol.slice(0, cut), eol.slice(cut)]).flat();
        const r = await through(small, chunks);
        expect(r.error).toBeNull();
        expect(r.text).toBe((event + eol).repeat(50));
      }
    });
  }
  test('lines without a blank line add up to one event', async () => {
    const r = await through(small, ['data: a\n', 'data: b\n'.repeat(10), 'data: c\n'.repeat(10)]);
    expect(r.error).toBeInstanceOf(ProviderError);
    expect(r.error?.message).toBe(
      'P: the model server sent a stream event longer than 100 bytes (no blank line); conch stopped reading the response. Check that the base URL points at a real model server.',
    );
  });
  test('a line without a break is named as a line, counted across chunks', async () => {
    const r = await through(small, ['data: ', 'A'.repeat(50), 'A'.repeat(50)]);
    expect((r.error as ProviderError).code).toBe('provider_protocol');
    expect(r.error?.message).toContain('a line longer than 100 bytes');
  });
  test('an event exactly at the bound passes', async () => {
    const r = await through(small, ['d'.repeat(98), '\n\n', 'e'.repeat(100)]);
    expect(r.error).toBeNull();
  });
  test('the total counts every byte of the response', async () => {
    const r = await through({ ...small, totalBytes: 1000 }, Array.from({ length: 20 }, () => 'data: 1234567890\n\n'.repeat(3)));
    expect(r.error?.message).toContain('more than 1000 bytes in one response');
  });
});

describe('error bodies', () => {
  test('a body within the bound arrives intact with its status and headers', async () => {
    const r = await through(small, ['{"error": ', '{"message": "no"}}'], 400);
    expect(r.error).toBeNull();
    expect(r.res?.status).toBe(400);
    expect(r.res?.headers.get('x-test')).toBe('kept');
    expect(r.text).toBe('{"error": {"message": "no"}}');
  });
  test('a longer body is a provider_protocol error carrying the status', async () => {
    const r = await through(small, ['x'.repeat(30), 'x'.repeat(30)], 502);
    expect(r.error).toBeInstanceOf(ProviderError);
    expect((r.error as ProviderError).status).toBe(502);
    expect(r.error?.message).toContain('an HTTP 502 error body longer than 50 bytes');
  });
});

test('an error from the underlying body (an abort) reaches the reader unchanged', async () => {
  const abort = new DOMException('The operation was aborted.', 'AbortError');
  let pulls = 0;
  const failing = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulls++ === 0) c.enqueue(enc.encode('data: {}\n\n'));
      else c.error(abort);
    },
  });
  const res = await boundedFetch(small, 'P', async () => new Response(failing))('http://model.invalid/');
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: {}\n\n');
  await expect(reader.read()).rejects.toBe(abort);
});
