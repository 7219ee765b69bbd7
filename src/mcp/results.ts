// An MCP tool result as conch's ToolResult: text and images as the model's own blocks; audio,
// resource links and embedded resources described in text (binary data the model cannot read is
// named, not dumped); structuredContent kept, and given to the model as JSON when the server sent
// no text of it. isError stays a tool error the model sees.
import type { ContentBlock, ToolResult } from '../core/content.ts';
import { detectImage } from '../files/filetype.ts';

type McpBlock = { type: string; [key: string]: unknown };

export interface McpCallResult {
  content?: McpBlock[];
  structuredContent?: unknown;
  isError?: boolean;
  /** Servers of protocol 2024-10-07 answer with toolResult instead. */
  toolResult?: unknown;
}

export function toToolResult(result: McpCallResult): ToolResult {
  const content: ContentBlock[] = [];
  for (const block of result.content ?? []) content.push(...mapBlock(block));
  if (result.toolResult !== undefined && content.length === 0) content.push({ type: 'text', text: json(result.toolResult) });
  const structured = result.structuredContent;
  if (structured !== undefined && !content.some((b) => b.type === 'text')) content.push({ type: 'text', text: json(structured) });
  if (content.length === 0) content.push({ type: 'text', text: '(the tool returned no content)' });
  return {
    content,
    ...(result.isError ? { isError: true } : {}),
    ...(structured !== undefined ? { details: { structuredContent: structured } } : {}),
  };
}

function mapBlock(block: McpBlock): ContentBlock[] {
  switch (block.type) {
    case 'text':
      return [{ type: 'text', text: String(block.text ?? '') }];
    case 'image':
      return image(String(block.mimeType ?? ''), block.data);
    case 'audio':
      return [{ type: 'text', text: `[audio ${block.mimeType ?? ''}, ${base64Bytes(block.data)} bytes, not shown]` }];
    case 'resource_link':
      return [{ type: 'text', text: `[resource link] ${describeResource(block)}` }];
    case 'resource':
      return embedded((block.resource ?? {}) as Record<string, unknown>);
    default:
      return [{ type: 'text', text: `[${block.type} content, not shown]` }];
  }
}

function embedded(resource: Record<string, unknown>): ContentBlock[] {
  const head = `[resource ${resource.uri ?? ''}${resource.mimeType ? ` (${resource.mimeType})` : ''}]`;
  if (typeof resource.text === 'string') return [{ type: 'text', text: `${head}\n${resource.text}` }];
  const mime = String(resource.mimeType ?? '');
  if (typeof resource.blob === 'string' && mime.startsWith('image/')) return [{ type: 'text', text: head }, ...image(mime, resource.blob)];
  return [{ type: 'text', text: `${head} ${base64Bytes(resource.blob)} bytes of binary data, not shown` }];
}

/**
 * An image as the type its bytes are: the providers check the bytes, and a label that disagrees (a
 * JPEG sent as image/png) or bytes that are no image they take failed the whole next request.
 */
function image(declared: string, data: unknown): ContentBlock[] {
  const base64 = typeof data === 'string' ? data : '';
  // 64 base64 characters are 48 bytes, more than any signature needs.
  const actual = detectImage(Buffer.from(base64.slice(0, 64), 'base64'));
  if (actual) return [{ type: 'image', mediaType: actual, data: base64 }];
  return [{ type: 'text', text: `[an image of type ${declared || '(none)'} (${base64Bytes(base64)} bytes), not shown: its bytes are not PNG, JPEG, GIF or WebP, the types models take]` }];
}

function describeResource(block: McpBlock): string {
  const parts = [String(block.name ?? block.title ?? ''), String(block.uri ?? '')].filter(Boolean).join(': ');
  const mime = block.mimeType ? ` (${block.mimeType})` : '';
  const about = block.description ? ` — ${block.description}` : '';
  return `${parts}${mime}${about}`;
}

function base64Bytes(data: unknown): number {
  if (typeof data !== 'string') return 0;
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
