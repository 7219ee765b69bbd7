// Every configured MCP server of a run: all started at once (not one after another), each tool
// list fetched once, and all stopped together when the host disposes the session. A server that
// fails to start is a report and a warning; the run goes on without its tools.
import { checkToolDefinition } from '../tools/catalog.ts';
import type { Tool } from '../tools/define.ts';
import type { ServerSpec } from './config.ts';
import { connect, type Connection, type ConnectSettings } from './connect.ts';

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
  const one = async (spec: ServerSpec): Promise<{ report: ServerReport; tools: Tool[] }> => {
    const started = performance.now();
    const base = { name: spec.name, source: spec.source, transport: spec.transport };
    const result = await connect(spec, settings);
    const startMs = Math.round(performance.now() - started);
    if (!result.ok) return { report: { ...base, status: 'failed', reason: result.reason, tools: [], startMs }, tools: [] };
    // Stopped while starting (Ctrl-C during start-up): this one goes too.
    if (stopped) await result.connection.close();
    else connections.push(result.connection);
    const { catalogTools } = await import('./tools.ts');
    const tools: Tool[] = [];
    const refused = [...result.connection.refused];
    for (const tool of catalogTools(spec, result.connection)) {
      const checked = checkToolDefinition(tool, tool.source, { mcp: true });
      if (checked.ok) tools.push(checked.tool);
      else refused.push(checked.reason);
    }
    const report: ServerReport = {
      ...base,
      status: 'started',
      ...(refused.length ? { reason: `tools not offered: ${refused.join('; ')}` } : {}),
      tools: tools.map((t) => ({ name: t.name, description: t.description })),
      startMs,
    };
    return { report, tools };
  };
  const ready = Promise.all(specs.map(one)).then((all) => {
    const warnings: string[] = [];
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
