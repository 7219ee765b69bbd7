// Normalise whatever a tool returned into a ToolResult, and bound it by its JSON-serialized size
// (the size the provider will actually send: escaping must not smuggle a result past the limit).
import type { ToolReturn } from './define.ts';
import type { ToolResult } from '../core/content.ts';
import { MODEL_IMAGE_TYPES, type ContentBlock } from '../core/content.ts';

const encoder = new TextEncoder();

export function normalizeResult(value: ToolReturn): ToolResult {
  if (value === undefined || value === null) return { content: [{ type: 'text', text: '(no output)' }] };
  if (typeof value === 'string') return { content: [{ type: 'text', text: value }] };
  if (isToolResult(value)) return value.content.some(unsendable) ? { ...value, content: value.content.map(describeUnsendable) } : value;
  const problem = malformedResult(value);
  if (problem) throw new Error(`its result is malformed: ${problem}`);
  const json = JSON.stringify(value);
  // A function or a symbol has no JSON form: sent as a text block without text, it failed the next request.
  if (typeof json !== 'string') return { content: [{ type: 'text', text: `(the tool returned a ${typeof value}, which has no text or JSON form)` }] };
  return { content: [{ type: 'text', text: json }] };
}

const unsendable = (b: ContentBlock) => b.type === 'image' && !MODEL_IMAGE_TYPES.includes(b.mediaType);

/**
 * An image the provider would refuse (a plugin's or MCP server's BMP, SVG, TIFF …) is named instead:
 * sent, it made the next model call fail with a 400 and ended the run.
 */
function describeUnsendable(block: ContentBlock): ContentBlock {
  if (!unsendable(block) || block.type !== 'image') return block;
  const bytes = Math.floor((block.data.length * 3) / 4);
  return { type: 'text', text: `[an image of type ${block.mediaType} (about ${bytes} bytes), not shown: models take PNG, JPEG, GIF and WebP only]` };
}

function isToolResult(value: unknown): value is ToolResult {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const content = (value as { content?: unknown }).content;
  return (
    Array.isArray(content) &&
    content.length > 0 &&
    content.every(
      (b) =>
        b && typeof b === 'object' &&
        ((b.type === 'text' && typeof b.text === 'string') ||
          (b.type === 'image' && typeof b.data === 'string' && typeof b.mediaType === 'string')),
    )
  );
}

/**
 * What is wrong with a value whose blocks are all typed text or image but not all well formed (an
 * image with MCP's mimeType): taken as a JSON value, its base64 went to the model as text, and its
 * isError was lost. A value with other blocks (a Jira document's { type: 'paragraph' }) is JSON.
 */
function malformedResult(value: unknown): string | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const content = (value as { content?: unknown }).content;
  if (!Array.isArray(content) || content.length === 0) return null;
  if (!content.every((b) => b && typeof b === 'object' && (b.type === 'text' || b.type === 'image'))) return null;
  for (const [i, b] of content.entries()) {
    if (b.type === 'text' && typeof b.text !== 'string') {
      return `content[${i}] is a text block whose text is ${b.text === undefined ? 'missing' : `a ${b.text === null ? 'null' : typeof b.text}`}, not a string`;
    }
    if (b.type !== 'image') continue;
    const hint = "an image block is { type: 'image', mediaType: 'image/png', data: '<base64>' }";
    if (typeof b.mediaType !== 'string') {
      const other = ['mimeType', 'media_type', 'mime', 'source'].find((k) => k in b);
      return `content[${i}] is an image block without a string mediaType${other ? ` (it has ${other})` : ''}: ${hint}`;
    }
    if (typeof b.data !== 'string') return `content[${i}] is an image block without string data: ${hint}`;
  }
  return null;
}

export function serializedBytes(content: ContentBlock[]): number {
  return encoder.encode(JSON.stringify(content)).length;
}

/** Bound a result to maxBytes of serialized content; the cut is marked so the model knows. */
export function boundResult(result: ToolResult, maxBytes: number): { result: ToolResult; truncated: boolean } {
  const total = serializedBytes(result.content);
  if (total <= maxBytes) return { result, truncated: false };
  const marker = (omitted: number) => `\n[truncated: ${omitted} bytes of tool output omitted to fit the ${maxBytes}-byte result limit]`;
  // Images cannot be cut meaningfully: keep text, drop images that do not fit.
  const blocks: ContentBlock[] = [];
  let budget = maxBytes - 64 - encoder.encode(marker(total)).length;
  for (const block of result.content) {
    const size = serializedBytes([block]);
    if (size <= budget) {
      blocks.push(block);
      budget -= size;
    } else if (block.type === 'text' && budget > 0) {
      blocks.push({ type: 'text', text: cutToSerializedBytes(block.text, budget) });
      budget = 0;
    }
  }
  const kept = serializedBytes(blocks);
  blocks.push({ type: 'text', text: marker(Math.max(0, total - kept)) });
  return { result: { ...result, content: blocks }, truncated: true };
}

/** The longest prefix of text whose JSON string form fits in maxBytes, never splitting a surrogate pair. */
function cutToSerializedBytes(text: string, maxBytes: number): string {
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (encoder.encode(JSON.stringify(text.slice(0, mid))).length <= maxBytes) lo = mid;
    else hi = mid - 1;
  }
  let end = lo;
  const code = text.charCodeAt(end - 1);
  if (end > 0 && code >= 0xd800 && code <= 0xdbff) end -= 1;
  return text.slice(0, end);
}

/** Text of a result for events and traces. */
export function resultText(result: ToolResult): string {
  return result.content.map((b) => (b.type === 'text' ? b.text : `[image ${b.mediaType}]`)).join('\n');
}
