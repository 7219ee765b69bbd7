// Whether a session start needs the MCP modules at all: cheap and synchronous, so a start without
// any server configured never loads the SDK. And how the project's .mcp.json reads, for `conch trust`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/types.ts';
import { parseJsonText } from '../config/json-text.ts';

/** The project's MCP config file, Claude Code's name for it. */
export const PROJECT_FILE = '.mcp.json';

export function mayHaveServers(config: Config, workspace: string, extra: readonly unknown[] | undefined): boolean {
  if (!config.mcp.enabled) return false;
  return Boolean(config.mcp.user || extra?.length || existsSync(join(workspace, PROJECT_FILE)));
}

/**
 * The "mcpServers" value of a .mcp.json text, parsed as a run parses it (a byte-order mark
 * accepted): what `conch trust` shows and pins must be what a run starts, or a mark alone would
 * start servers the trust listed none of. undefined for text that is not JSON.
 */
export function projectServers(text: string): unknown {
  const parsed = parseJsonText(text);
  return parsed.ok ? (parsed.value as { mcpServers?: unknown } | null)?.mcpServers : undefined;
}
