// First-party plugin: a folder of Markdown notes (an Obsidian vault) as tools. The vault is the one
// folder the user configured (plugins.vault.root, narrowed by allow/deny); without it the plugin
// does not start. Written only against the public API.
import type { AtomicSetOptions, PluginSetup, ToolDefinition } from 'conch';
import { VaultIndex } from './notes.ts';
import { readTools } from './read.ts';
import { loadSettings, type VaultSettings } from './settings.ts';
import { writeTools } from './write.ts';

/** The tools over one vault (tests build them directly, with a failure hook for the writes). */
export function vaultTools(settings: VaultSettings, commit: AtomicSetOptions = {}): ToolDefinition[] {
  const vault = { index: new VaultIndex(settings) };
  return [...readTools(vault), ...writeTools(vault, commit)];
}

export default async function vault(setup: PluginSetup): Promise<ToolDefinition[]> {
  return vaultTools(await loadSettings(setup.settings, setup.configFile));
}
