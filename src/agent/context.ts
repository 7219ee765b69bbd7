// Keeping a request within context_bytes. A continued conversation grows run after run; rather than
// refuse it, the oldest tool results are replaced by a note the model reads (so it knows something
// was there and can ask again), oldest first, until the request fits. Only when nothing is left to
// elide does the run end as limit_exceeded.
import type { Message, ModelRequest, ToolResultMessage } from '../providers/types.ts';

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

// The size of every request is checked, and a long run's conversation is most of it: serialising it
// whole on every turn made each turn cost more than the last. The conversation only grows at its
// end, so the size of all messages but the last (a tool message whose results are still arriving)
// is kept per conversation and only what follows is measured. Anything else (an elision, a
// conversation replaced or cut) fails the check of the last message measured and is measured anew.
interface Measured {
  /** How many leading messages `bytes` covers, commas between them included. */
  count: number;
  bytes: number;
  /** messages[count - 1] when measured. */
  last: Message;
}
const measured = new WeakMap<Message[], Measured>();

/** JSON.stringify(request) in UTF-8 bytes, each message serialised once unless it may still change. */
function requestBytes(request: ModelRequest): number {
  const { messages } = request;
  let known = measured.get(messages);
  if (known && (known.count > messages.length || messages[known.count - 1] !== known.last)) known = undefined;
  let count = known?.count ?? 0;
  let bytes = known?.bytes ?? 0;
  for (; count < messages.length - 1; count++) bytes += bytesOf(messages[count]) + (count > 0 ? 1 : 0);
  if (count > 0) measured.set(messages, { count, bytes, last: messages[count - 1]! });
  const lastBytes = count < messages.length ? bytesOf(messages[count]) + (count > 0 ? 1 : 0) : 0;
  // The rest of the request (system prompt, tools) is small: measured every time, messages as [].
  return bytesOf({ ...request, messages: [] }) + bytes + lastBytes;
}

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

/**
 * Elide the oldest tool results of `request.messages` until the request fits `limit`. A tool
 * message with an elided result is replaced in the array by a new message object, never edited:
 * the providers keep each message's conversion from one request to the next and tell a changed
 * message by its identity (providers/converted-history.ts).
 */
export function fitContext(request: ModelRequest, limit: number): Fit {
  let bytes = requestBytes(request);
  if (bytes <= limit) return { bytes, elided: null };
  let results = 0;
  let removed = 0;
  const { messages } = request;
  for (let m = 0; m < messages.length && bytes > limit; m++) {
    const message = messages[m]!;
    if (message.role !== 'tool') continue;
    let kept: ToolResultMessage[] | null = null;
    for (let i = 0; i < message.results.length && bytes > limit; i++) {
      const result = message.results[i]!;
      if (isElided(result)) continue;
      const before = bytesOf(result.content);
      const content = [{ type: 'text' as const, text: elisionNote(before) }];
      const after = bytesOf(content);
      if (after >= before) continue;
      kept ??= message.results.slice();
      kept[i] = { ...result, content };
      // The content array appears verbatim in the serialized request, so the saving is exact.
      bytes -= before - after;
      results++;
      removed += before;
    }
    if (kept) messages[m] = { ...message, results: kept };
  }
  if (results > 0) measured.delete(messages);
  return { bytes, elided: results > 0 ? { results, bytes: removed } : null };
}
