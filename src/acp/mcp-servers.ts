// The MCP servers an editor hands over in session/new, as conch's server specs: started for that
// session like configured ones (same sandbox, same clean environment plus the variables given).
import type { McpServer } from '@agentclientprotocol/sdk';
import type { ServerSpec } from '../mcp/config.ts';

export async function editorServers(servers: McpServer[], log: (message: string) => void): Promise<ServerSpec[]> {
  if (servers.length === 0) return [];
  const entries: Record<string, unknown> = {};
  for (const server of servers) {
    // Editors name servers for people ("GitHub Server"); the name becomes part of each tool name.
    const base = server.name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 32) || 'server';
    // Two names that read the same ("Docs Server", "Docs.Server") would leave one server out unsaid.
    let name = base;
    for (let n = 2; Object.hasOwn(entries, name); n++) name = `${base.slice(0, 32 - String(n).length - 1)}_${n}`;
    if (name !== base) log(`MCP server '${server.name}' is named ${name} (its tools mcp__${name}__…): another server here is ${base}`);
    if ('type' in server && server.type === 'sse') {
      log(`MCP server ${server.name} not started: conch speaks stdio and Streamable HTTP, not SSE`);
      continue;
    }
    if ('url' in server) {
      entries[name] = { url: server.url, headers: Object.fromEntries(server.headers.map((h) => [h.name, h.value])) };
    } else {
      entries[name] = { command: server.command, args: server.args, env: Object.fromEntries(server.env.map((e) => [e.name, e.value])) };
    }
  }
  const { parseServers } = await import('../mcp/config.ts');
  // The editor's values are literal: nothing to expand.
  return parseServers(entries, { source: 'session/new', project: false, env: {}, key: 'mcpServers' });
}
