// One server's MCP tools as catalog tools named mcp__<server>__<tool>, so they pass the same
// argument validation, limits, --tools, policy rules and tracing as any other tool.
import { ErrorCode, McpError, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Tool } from '../tools/define.ts';
import { MAX_DESCRIPTION, selects, type ServerSpec } from './config.ts';
import type { Connection } from './connect.ts';
import { toToolResult, type McpCallResult } from './results.ts';
import { PROGRESS_CHARS, progressWindow } from '../tools/progress.ts';

const MAX_NAME = 64;
/** The catalog name: providers accept [A-Za-z0-9_-], at most 64 characters. */
export function toolName(server: string, tool: string): string {
  return `mcp__${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, MAX_NAME);
}

export function selectTools(spec: ServerSpec, tools: McpTool[]): McpTool[] {
  return tools.filter((t) => selects(spec, t.name));
}

/** Each catalog tool with the name the server gave it. */
export function catalogTools(spec: ServerSpec, connection: Connection): { tool: Tool; mcpName: string }[] {
  return selectTools(spec, connection.tools).map((mcp) => ({ mcpName: mcp.name, tool: catalogTool(spec, connection, mcp) }));
}

function catalogTool(spec: ServerSpec, connection: Connection, mcp: McpTool): Tool {
  const { client } = connection;
  const name = toolName(spec.name, mcp.name);
  const schema = { ...(mcp.inputSchema as Record<string, unknown>) };
  // The catalog compiles the schema itself; a dialect marker means nothing to it.
  delete schema.$schema;
  return {
    name,
    description: (mcp.description || mcp.title || `${mcp.name} from the MCP server ${spec.name}`).slice(0, MAX_DESCRIPTION),
    parameters: schema,
    timeoutMs: spec.toolTimeoutMs,
    source: `MCP server ${spec.name} (${spec.source})`,
    async execute(args, ctx) {
      let result: McpCallResult;
      const progress = latestEvery((text) => ctx.update(text));
      try {
        result = (await client.callTool({ name: mcp.name, arguments: args as Record<string, unknown> }, undefined, {
          signal: ctx.signal,
          timeout: spec.toolTimeoutMs,
          onprogress: (p) => {
            const of = p.total ? `${p.progress}/${p.total}` : String(p.progress);
            progress.push(`${p.message ? `${String(p.message).slice(0, PROGRESS_CHARS)} ` : ''}(${of})\n`);
          },
        })) as McpCallResult;
      } catch (error) {
        // The SDK reports any abort (Ctrl-C, session/cancel, the call's or the run's deadline) as
        // RequestTimeout, which would tell the model the server was too slow; the reason says why.
        if (ctx.signal.aborted) {
          const reason = ctx.signal.reason instanceof Error ? ctx.signal.reason.message : String(ctx.signal.reason ?? 'cancelled');
          throw new Error(`stopped before the MCP server ${spec.name} answered ${mcp.name}: ${reason}`);
        }
        if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
          throw new Error(`the MCP server ${spec.name} did not answer ${mcp.name} within ${spec.toolTimeoutMs} ms (toolTimeoutMs)`);
        }
        // Closed during this call, or before it (the SDK then says only "Not connected").
        if ((error instanceof McpError && error.code === ErrorCode.ConnectionClosed) || client.transport === undefined) {
          // Why it died is what the author needs: a start-up crash shows its stderr, so does this.
          const { how, stderr } = await connection.ended();
          throw new Error(`the MCP server ${spec.name} is gone (${how || 'its connection closed'}); its tools fail for the rest of this run${stderr}`);
        }
        // The SDK's check of the answer (bogus base64, a block without its type): one line, not its dump of issues.
        const issues = (error as { issues?: { path: PropertyKey[]; message: string }[] }).issues;
        if (Array.isArray(issues) && issues.length > 0) {
          const first = issues[0]!;
          throw new Error(`the MCP server ${spec.name} answered ${mcp.name} with a result that is not valid MCP (${first.path.map(String).join('.')}: ${first.message})`);
        }
        throw error;
      } finally {
        progress.stop();
      }
      return toToolResult(result);
    },
  } satisfies Tool;
}

/** Passes on the latest text pushed, once per progress window; what is pending when stopped is dropped. */
function latestEvery(pass: (text: string) => void) {
  let latest: string | null = null;
  const window = progressWindow(() => {
    if (latest !== null) pass(latest);
    latest = null;
  });
  return {
    push(text: string) {
      latest = text;
      window.poke();
    },
    stop() {
      window.stop();
      latest = null;
    },
  };
}
