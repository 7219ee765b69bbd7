// The session's catalog: the four kernel tools, then plugin tools, then what flags and policy take
// out. Registered here, above tools/, so the tool framework never imports the tools it hosts.
import type { Config } from '../config/types.ts';
import { toolLimit, type ProviderConfig } from '../config/provider-config.ts';
import { SetupError } from '../core/errors.ts';
import type { PluginReport } from '../plugins/load.ts';
import type { Executor } from '../shell/exec.ts';
import { Catalog, KERNEL_TOOLS } from '../tools/catalog.ts';
import type { Tool } from '../tools/define.ts';
import { createBashTool } from '../tools/kernel/bash.ts';
import { createEditTool } from '../tools/kernel/edit.ts';
import { createReadTool } from '../tools/kernel/read.ts';
import { createWriteTool } from '../tools/kernel/write.ts';
import type { Workspace } from '../workspace/paths.ts';
import type { RevisionTracker } from '../workspace/revision.ts';

export type PluginLoader = (reserved: Map<string, string>, workspaceRoot: string) => Promise<{ tools: Tool[]; reports: PluginReport[] }>;

/** bash, read, write and edit, bound to one run's executor and revisions. */
export function kernelTools(config: Config, executor: Executor, workspace: Workspace, revisions: RevisionTracker): Tool[] {
  return [
    createBashTool({ exec: executor, limits: config.limits }),
    createReadTool({ workspace, revisions }),
    createWriteTool({ workspace, revisions }),
    createEditTool({ workspace, revisions }),
  ];
}

export function kernelCatalog(tools: Tool[]): Catalog {
  const catalog = new Catalog();
  for (const tool of tools) catalog.register(tool);
  return catalog;
}

/** Load and register plugin tools; each problem (a collision, a failed file) becomes a warning. */
export async function addPlugins(catalog: Catalog, config: Config, load: PluginLoader | undefined, workspaceRoot: string, warnings: string[]): Promise<PluginReport[]> {
  if (!load || !config.plugins.enabled) return [];
  const reserved = new Map(catalog.tools().map((t) => [t.name, t.source] as [string, string]));
  const loaded = await load(reserved, workspaceRoot);
  for (const tool of loaded.tools) {
    const problem = catalog.register(tool, { override: config.plugins.allowOverride.includes(tool.name) });
    if (problem) warnings.push(problem);
  }
  for (const r of loaded.reports) if (r.status !== 'loaded') warnings.push(`plugin ${r.path} ${r.status}: ${r.reason ?? 'not loaded'}`);
  return loaded.reports;
}

/**
 * Flags and policy take tools out; they never add one that is not registered. A tool --tools asks
 * for that another flag or the policy took out is said in `warnings`: the run goes on without it.
 */
export function narrowCatalog(catalog: Catalog, config: Config, warnings: string[] = []): void {
  const t = config.tools;
  if (!t.filesystem) for (const name of ['read', 'write', 'edit']) catalog.remove(name, 'filesystem tools are off (--no-filesystem)');
  // The home-run reason is a clause of its own: in brackets it nested ("(… home directory (--allow-home-writes))").
  const why = config.readOnlyWhy ? `the run is read-only because ${config.readOnlyWhy}; only --allow-home-writes lets a run there write` : 'the run is read-only (--read-only)';
  // Plugin tools that declare `writes` go with write and edit.
  if (t.readOnly) for (const name of ['write', 'edit', ...catalog.tools().filter((tool) => tool.writes).map((tool) => tool.name)]) catalog.remove(name, why);
  if (!t.shell) catalog.remove('bash', 'the shell is off (--no-shell)');
  for (const { name, rule } of t.denied) catalog.remove(name, `denied by policy rule '${rule}'`);
  if (t.only) {
    const unknown = t.only.filter((name) => !catalog.has(name) && !KERNEL_TOOLS.includes(name as never));
    if (unknown.length) {
      throw new SetupError(`--tools names tools that are not registered: ${unknown.join(', ')}. Available: ${catalog.names().join(', ')}`);
    }
    for (const name of t.only) {
      const why = catalog.removedWhy(name);
      if (why) warnings.push(`--tools names ${name}, which this run does not offer: ${why}`);
    }
    for (const name of catalog.names()) if (!t.only.includes(name)) catalog.remove(name, 'not in --tools');
  }
}

/** Dropped tools named in the warning; past this many, a count (a server may offer thousands). */
const NAMED = 20;

/**
 * At most as many tools as the strictest model of the route takes (OpenAI's own API refuses a
 * request with more): the catalog's first ones, which are the kernel tools, plugins, then MCP tools
 * in config and list order. The rest are removed, so a call to one is refused, and named in one warning.
 */
export function capCatalog(catalog: Catalog, route: ProviderConfig[], warnings: string[]): void {
  let strictest: { limit: number; provider: ProviderConfig } | undefined;
  for (const provider of route) {
    const limit = toolLimit(provider);
    if (limit !== undefined && (!strictest || limit < strictest.limit)) strictest = { limit, provider };
  }
  const over = strictest ? catalog.names().slice(strictest.limit) : [];
  if (!strictest || over.length === 0) return;
  const { limit, provider } = strictest;
  const takes = `${provider.name}/${provider.model} takes at most ${limit} tools`;
  const fix = 'the tools you need with "enabledTools" in each MCP server\'s entry (mcpServers in config.json or .mcp.json)';
  for (const name of over) catalog.remove(name, `${takes}; pick ${fix}`);
  const named = over.slice(0, NAMED).join(', ') + (over.length > NAMED ? ` and ${over.length - NAMED} more` : '');
  warnings.push(`${takes}; ${over.length} tools are not offered: ${named}. Choose ${fix}`);
}
