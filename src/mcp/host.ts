// What a host's session start does with MCP: find the servers (user config, a trusted project's
// .mcp.json, an editor's session/new) and start them all at once. Imported only when there is a
// server to start, so a start without MCP never loads the SDK.
import type { Config } from '../config/types.ts';
import type { ServerSpec } from './config.ts';
import { startServers, type ConnectSettings, type McpServers } from './index.ts';
import { specSecrets } from './config.ts';
import type { SecretValue } from '../core/secret-scrub.ts';
import { configuredServers } from './sources.ts';

export const STOP_GRACE_MS = 2000;

export interface OpenedMcp {
  servers: McpServers | null;
  /** Project servers skipped in an untrusted workspace: one line for the user. */
  skipped: string | null;
  /** The started servers' env and header values: kept out of traces and sessions. */
  secrets: SecretValue[];
}

export async function openMcp(
  config: Config,
  extra: ServerSpec[],
  settings: Omit<ConnectSettings, 'stopGraceMs' | 'clientVersion'>,
): Promise<OpenedMcp> {
  const found = await configuredServers({
    user: config.mcp.user,
    cwd: settings.workspace,
    env: settings.parentEnv,
    trustedHash: async () => (await import('../plugins/trust.ts')).trustedMcpHash(config.configDir, settings.workspace),
    trustedFiles: async () => (await import('../plugins/trust.ts')).trustedMcpFiles(config.configDir, settings.workspace),
  });
  const names = new Set(extra.map((s) => s.name));
  const specs = [...extra, ...found.servers.filter((s) => !names.has(s.name))];
  if (specs.length === 0) return { servers: null, skipped: found.skipped, secrets: [] };
  const { default: pkg } = await import('../../package.json', { with: { type: 'json' } });
  return {
    servers: startServers(specs, { ...settings, stopGraceMs: STOP_GRACE_MS, clientVersion: pkg.version }),
    skipped: found.skipped,
    secrets: specSecrets(specs),
  };
}
