// A server's tools/list, all pages, with what conch refuses of it said per tool: an invalid tool, a
// schema nested too deep to walk, and whatever is past toolListBytes. Only the tools enabledTools
// and disabledTools leave in are kept and counted.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { MAX_DESCRIPTION, selects, type ServerSpec } from './config.ts';

export async function listAll(client: Client, spec: ServerSpec): Promise<{ tools: McpTool[]; refused: string[] }> {
  const timeout = spec.startupTimeoutMs;
  const tools: McpTool[] = [];
  const refused: string[] = [];
  const { ToolSchema } = await import('@modelcontextprotocol/sdk/types.js');
  // Only the tools enabledTools and disabledTools leave in count, and are kept.
  let bytes = 0;
  let full = false;
  let cursor: string | undefined;
  do {
    const params = cursor ? { cursor } : undefined;
    let page: { tools: unknown[]; nextCursor?: string | undefined };
    try {
      page = await client.listTools(params, { timeout });
    } catch (error) {
      // The SDK refuses the whole page, and so the server, for one invalid tool: asked again
      // without its check, each tool is checked on its own and only the invalid ones are refused.
      if (!Array.isArray((error as { issues?: unknown }).issues)) throw error;
      page = await listLoose(client, params, timeout);
    }
    for (const raw of page.tools) {
      const checked = ToolSchema.safeParse(raw);
      if (!checked.success) {
        refused.push(`tool ${JSON.stringify(nameOf(raw))}: ${checked.error.issues.map((i) => `${i.path.join('.') || 'the tool'}: ${i.message}`)[0]}`);
        continue;
      }
      const tool = checked.data;
      if (!selects(spec, tool.name)) continue;
      if (tooDeep(tool.inputSchema, MAX_SCHEMA_DEPTH)) {
        refused.push(`tool ${JSON.stringify(nameOf(tool))}: inputSchema is nested more than ${MAX_SCHEMA_DEPTH} levels deep`);
        continue;
      }
      bytes += tool.name.length + Math.min((tool.description ?? '').length, MAX_DESCRIPTION) + JSON.stringify(tool.inputSchema).length;
      if (bytes > spec.toolListBytes) full = true;
      if (!full) tools.push(tool);
    }
    cursor = page.nextCursor;
  } while (cursor && !full);
  if (full) refused.push(`its tool list is over ${spec.toolListBytes} bytes (toolListBytes); pick the tools you need with enabledTools, or raise toolListBytes in its entry`);
  return { tools, refused };
}

async function listLoose(client: Client, params: { cursor: string } | undefined, timeout: number) {
  const { ResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const page = (await client.request({ method: 'tools/list', ...(params ? { params } : {}) }, ResultSchema, { timeout })) as { tools?: unknown; nextCursor?: unknown };
  if (!Array.isArray(page.tools)) throw new Error('its tools/list answer has no "tools" list');
  return { tools: page.tools as unknown[], nextCursor: typeof page.nextCursor === 'string' ? page.nextCursor : undefined };
}

/**
 * Deeper than any schema a model is given: every later step (measuring, checking, compiling,
 * sending) walks a schema recursively, and one nested thousands deep overflowed the stack.
 */
const MAX_SCHEMA_DEPTH = 128;

/** Whether `value` nests deeper than `limit`, found without recursion. */
function tooDeep(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (!node || typeof node !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

function nameOf(tool: unknown): string {
  const name = (tool as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name.slice(0, 64) : '(unnamed)';
}
