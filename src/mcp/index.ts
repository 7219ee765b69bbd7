// Every configured MCP server of a run: all started at once (not one after another), each tool
// list fetched once, and all stopped together when the host disposes the session. A server that
// fails to start is a report and a warning; the run goes on without its tools.
import { checkToolDefinition } from '../tools/catalog.ts';
import type { Tool } from '../tools/define.ts';
import type { ServerSpec } from './config.ts';
import { connect, type Connection, type ConnectSettings } from './connect.ts';
import { createHash } from 'node:crypto';

export interface ServerReport {
  name: string;
  source: string;
  transport: 'stdio' | 'http';
  status: 'started' | 'failed';
  /** Why it failed, or tools it offered that conch could not take. */
  reason?: string;
  /** Catalog names of its tools (after enabledTools/disabledTools). */
  tools: { name: string; description: string }[];
  /** Start-up time in ms. */
  startMs: number;
}

export interface McpStarted {
  tools: Tool[];
  reports: ServerReport[];
  warnings: string[];
}

export interface McpServers {
  /** Settles once every server has started or failed (each within its startupTimeoutMs). */
  ready: Promise<McpStarted>;
  /** Stop every server (stdin closed, then killed after the grace period). Safe to call twice. */
  stop(): Promise<void>;
}

export type { ConnectSettings } from './connect.ts';
export type { ServerSpec } from './config.ts';

export function startServers(specs: ServerSpec[], settings: ConnectSettings): McpServers {
  const connections: Connection[] = [];
  let stopped = false;
  const one = async (spec: ServerSpec): Promise<{ report: ServerReport; tools: Tool[]; own: string[] }> => {
    const started = performance.now();
    const base = { name: spec.name, source: spec.source, transport: spec.transport };
    const result = await connect(spec, settings);
    const startMs = Math.round(performance.now() - started);
    if (!result.ok) return { report: { ...base, status: 'failed', reason: result.reason, tools: [], startMs }, tools: [], own: [] };
    // Stopped while starting (Ctrl-C during start-up): this one goes too.
    if (stopped) await result.connection.close();
    else connections.push(result.connection);
    const { catalogTools } = await import('./tools.ts');
    const tools: Tool[] = [];
    /** The server's own name of each tool, for a rename to name. */
    const own: string[] = [];
    const refused = [...result.connection.refused];
    for (const { tool, mcpName } of catalogTools(spec, result.connection)) {
      const checked = checkToolDefinition(tool, tool.source, { mcp: true });
      if (checked.ok) {
        tools.push(checked.tool);
        own.push(mcpName);
      } else refused.push(checked.reason);
    }
    const report: ServerReport = {
      ...base,
      status: 'started',
      ...(refused.length ? { reason: `tools not offered: ${refused.join('; ')}` } : {}),
      tools: [],
      startMs,
    };
    return { report, tools, own };
  };
  const ready = Promise.all(specs.map(one)).then((all) => {
    const warnings: string[] = [];
    // In the order the servers were configured, so a rename is the same in every run.
    const taken = new Set<string>();
    for (const a of all) {
      a.tools = a.tools.map((tool, i) => {
        const name = distinctName(tool.name, a.report.name, a.own[i]!, taken);
        taken.add(name);
        if (name === tool.name) return tool;
        warnings.push(`MCP server ${a.report.name}: tool ${JSON.stringify(a.own[i])} is offered as ${name} (${tool.name} is another MCP tool's name)`);
        return { ...tool, name };
      });
      a.report.tools = a.tools.map((t) => ({ name: t.name, description: t.description }));
    }
    for (const { report } of all) {
      if (report.status === 'failed') warnings.push(`MCP server ${report.name} did not start, its tools are not offered: ${report.reason}`);
      else if (report.reason) warnings.push(`MCP server ${report.name}: ${report.reason}`);
    }
    return { tools: all.flatMap((a) => a.tools), reports: all.map((a) => a.report), warnings };
  });
  return {
    ready,
    async stop() {
      stopped = true;
      const open = connections.splice(0);
      await Promise.all(open.map((c) => c.close()));
      // Servers still starting close themselves as they finish (each within its startupTimeoutMs).
      await ready.catch(() => {});
    },
  };
}

/**
 * A name apart from those `taken`, for a tool whose catalog name another MCP tool has (a.b and a_b,
 * two names alike in their first 64 characters, server a's b__c and server a__b's c): the name cut
 * to make room for a hash of the server and the tool's own name, so it is the same in every run.
 */
function distinctName(name: string, server: string, tool: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  const hash = createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 8);
  return `${name.slice(0, 64 - hash.length - 1)}_${hash}`;
}
