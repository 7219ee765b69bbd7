// Whether a session start needs the MCP modules at all: cheap and synchronous, so a start without
// any server configured never loads the SDK.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/types.ts';

/** The project's MCP config file, Claude Code's name for it. */
export const PROJECT_FILE = '.mcp.json';

export function mayHaveServers(config: Config, workspace: string, extra: readonly unknown[] | undefined): boolean {
  if (!config.mcp.enabled) return false;
  return Boolean(config.mcp.user || extra?.length || existsSync(join(workspace, PROJECT_FILE)));
}
