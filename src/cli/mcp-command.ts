// `conch mcp [--json]`: the configured MCP servers, started as a run would start them: whether each
// started, its tools as the model sees them, and why a failed one failed. Exit 1 when one failed (as
// `conch tools` for a plugin), so a CI step catches it; a project server skipped for trust is no failure.
import type { CliFlags } from '../config/types.ts';
import type { ServerReport } from '../mcp/index.ts';
import { openSession } from '../host/session.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { loadCliConfig, setupFailure } from './setup.ts';
import { terminalSafe } from './tool-lines.ts';
import { join } from 'node:path';
import { tildePath } from '../core/display-path.ts';

export async function mcpCommand(flags: CliFlags, json: boolean): Promise<number> {
  try {
    const config = await loadCliConfig(flags);
    const session = await openSession(config, { cwd: process.cwd() });
    try {
      const offered = new Set(session.catalog.names());
      if (json) {
        const servers = session.mcp.map((s) => ({ ...s, tools: s.tools.map((t) => ({ ...t, offered: offered.has(t.name) })) }));
        stdout.write(`${JSON.stringify({ servers, warnings: session.warnings }, null, 2)}\n`);
      // Names, descriptions and a failed server's stderr are the servers' words: no control sequence reaches the terminal.
      } else stdout.write(terminalSafe(render(session.mcp, offered, session.warnings, config.mcp.enabled, tildePath(join(config.configDir, 'config.json')))));
      const failed = session.mcp.filter((s) => s.status === 'failed').map((s) => s.name);
      if (failed.length === 0) return 0;
      if (!json) stderr.write(terminalSafe(`conch: ${failed.length} of ${session.mcp.length} MCP server${session.mcp.length === 1 ? '' : 's'} failed to start: ${failed.join(', ')}\n`));
      return 1;
    } finally {
      await session.dispose();
    }
  } catch (error) {
    return setupFailure(error, json, null, 'mcp');
  }
}

function render(reports: ServerReport[], offered: Set<string>, warnings: string[], enabled: boolean, userConfig: string): string {
  if (!enabled) return 'MCP servers are off (--no-mcp).\n';
  const lines: string[] = [];
  // A skipped project file is a warning, not a report: show it here too, whether its servers were
  // skipped for trust or the file itself could not be read (mcp/sources.ts: both name the file).
  for (const w of warnings) if (w.includes('.mcp.json: ') && w.includes('not started')) lines.push(w, '');
  if (reports.length === 0 && lines.length === 0) {
    return `No MCP servers configured: add "mcpServers" to ${userConfig}, or a .mcp.json to the workspace.\n`;
  }
  for (const r of reports) {
    const head = `${r.name} (${r.transport}, ${r.source}): ${r.status === 'started' ? `started in ${r.startMs} ms, ${r.tools.length} tool${r.tools.length === 1 ? '' : 's'}` : 'failed'}`;
    lines.push(head);
    if (r.reason) lines.push(`  ${r.status === 'failed' ? 'why' : 'note'}: ${r.reason.replace(/\n/g, '\n  ')}`);
    for (const t of r.tools) lines.push(`  ${t.name}${offered.has(t.name) ? '' : ' (not offered in this configuration)'}  ${t.description.split('\n')[0]}`);
    lines.push('');
  }
  return `${lines.join('\n')}`;
}
