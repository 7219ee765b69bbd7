// The session's MCP servers: started as the session opens, their tools registered before the
// catalog is narrowed (so --tools and policy rules apply to them), stopped when it is disposed.
// The MCP modules (and the SDK) are imported only when a server may be configured (mcp/gate.ts).
import type { Config } from '../config/types.ts';
import type { ServerReport, ServerSpec } from '../mcp/index.ts';
import type { PlaceholderScope, SandboxSettings } from '../sandbox/index.ts';
import type { Catalog } from '../tools/catalog.ts';
import { mayHaveServers } from '../mcp/gate.ts';
import type { SecretValue } from '../core/secret-scrub.ts';

export interface SessionMcp {
  /** Wait for every server, register its tools; problems become warnings. */
  register(catalog: Catalog, warnings: string[]): Promise<ServerReport[]>;
  stop(): Promise<void>;
  /** The servers' env and header values (tokens): traces and sessions hide them. */
  secrets: SecretValue[];
}

/**
 * An MCP server's schemas are checked in this thread against what the model sends: a pattern that
 * backtracks (a ReDoS, `^(a+)+$` against 40 a's and a '!': seconds per call, and refused calls follow
 * one another with no timer in between) stops it as plugin code can, past the deadline and deaf to
 * Ctrl-C. Every host (one-shot runs, `conch acp`, `conch -i`) starts its watchdog when this is true.
 */
export function offersMcpTools(session: { mcp: { status: string; tools: unknown[] }[] }): boolean {
  return session.mcp.some((server) => server.status === 'started' && server.tools.length > 0);
}

const NONE: SessionMcp = { register: async () => [], stop: async () => {}, secrets: [] };

export async function startMcp(
  config: Config,
  extra: ServerSpec[] | undefined,
  settings: { workspace: string; tmpDir: () => string; sandbox: SandboxSettings; unrestricted: boolean; placeholders: PlaceholderScope },
): Promise<SessionMcp> {
  if (!mayHaveServers(config, settings.workspace, extra)) return NONE;
  const { openMcp } = await import('../mcp/host.ts');
  const opened = await openMcp(config, extra ?? [], { ...settings, parentEnv: process.env });
  const servers = opened.servers;
  return {
    async register(catalog, warnings) {
      if (opened.skipped) warnings.push(opened.skipped);
      if (!servers) return [];
      const started = await servers.ready;
      for (const tool of started.tools) {
        const problem = catalog.register(tool);
        if (problem) warnings.push(problem);
      }
      warnings.push(...started.warnings);
      return started.reports;
    },
    stop: () => servers?.stop() ?? Promise.resolve(),
    secrets: opened.secrets,
  };
}
