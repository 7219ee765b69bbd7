// Keeping a request within context_bytes. A continued conversation grows run after run; rather than
// refuse it, the oldest tool results are replaced by a note the model reads (so it knows something
// was there and can ask again), oldest first, until the request fits. Only when nothing is left to
// elide does the run end as limit_exceeded.
import type { ModelRequest, ToolResultMessage } from '../providers/types.ts';

const encoder = new TextEncoder();
const bytesOf = (value: unknown) => encoder.encode(JSON.stringify(value)).length;

export const ELIDED_PREFIX = '[elided by conch:';

export function elisionNote(bytes: number): string {
  return `${ELIDED_PREFIX} this tool result (${bytes} bytes) was removed to keep the conversation within the context_bytes limit; call the tool again if you need it]`;
}

function isElided(result: ToolResultMessage): boolean {
  const only = result.content.length === 1 ? result.content[0] : undefined;
  return only?.type === 'text' && only.text.startsWith(ELIDED_PREFIX);
}

export interface Fit {
  /** Serialized size of the request after any elision. */
  bytes: number;
  /** Results elided by this call and the bytes of content they held. */
  elided: { results: number; bytes: number } | null;
}

/** Elide the oldest tool results of `request.messages` (in place) until the request fits `limit`. */
export function fitContext(request: ModelRequest, limit: number): Fit {
  let bytes = bytesOf(request);
  if (bytes <= limit) return { bytes, elided: null };
  let results = 0;
  let removed = 0;
  for (const message of request.messages) {
    if (bytes <= limit) break;
    if (message.role !== 'tool') continue;
    for (let i = 0; i < message.results.length && bytes > limit; i++) {
      const result = message.results[i]!;
      if (isElided(result)) continue;
      const before = bytesOf(result.content);
      const content = [{ type: 'text' as const, text: elisionNote(before) }];
      const after = bytesOf(content);
      if (after >= before) continue;
      message.results[i] = { ...result, content };
      // The content array appears verbatim in the serialized request, so the saving is exact.
      bytes -= before - after;
      results++;
      removed += before;
    }
  }
  return { bytes, elided: results > 0 ? { results, bytes: removed } : null };
}
