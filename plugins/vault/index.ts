// First-party plugin: a folder of Markdown notes (an Obsidian vault) as tools. The vault is the one
// folder the user configured (plugins.vault.root, narrowed by allow/deny); without it the plugin
// does not start. Written only against the public API.
import type { AtomicSetOptions, PluginSetup, ToolDefinition } from 'conch';
import { cacheFile } from './cache.ts';
import { VaultIndex } from './notes.ts';
import { readTools } from './read.ts';
import { loadSettings, type VaultSettings } from './settings.ts';
import { writeTools } from './write.ts';

/**
 * The tools over one vault (tests build them directly, with a failure hook for the writes).
 * `cache`: the file the index is kept in between processes, null for none.
 */
export function vaultTools(settings: VaultSettings, commit: AtomicSetOptions = {}, cache: string | null = null): ToolDefinition[] {
  const vault = { index: new VaultIndex(settings, cache) };
  return [...readTools(vault), ...writeTools(vault, commit)];
}

export default async function vault(setup: PluginSetup): Promise<ToolDefinition[]> {
  const settings = await loadSettings(setup.settings, setup.configFile);
  return vaultTools(settings, {}, cacheFile(settings.root));
}
