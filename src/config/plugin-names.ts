// First-party plugin names as config files and --plugin give them: an unknown name is a setup
// error, named where it was written (file and key, or the flag).
import { ConfigError } from '../core/errors.ts';

/** First-party plugin names as one file or flag gave them; `where(i)` locates the i-th for a message. */
export interface PluginNames {
  names: string[];
  where: (i: number) => { label: string; file?: string; key: string };
}

/** `toolsDir`: the user's plugin folder as messages name it (XDG_CONFIG_HOME moves it). */
export async function checkPluginNames(lists: PluginNames[], toolsDir: string): Promise<void> {
  const { availableFirstParty } = await import('./first-party.ts');
  const available = await availableFirstParty();
  for (const { names, where } of lists) {
    const i = names.findIndex((n) => !available.includes(n));
    if (i === -1) continue;
    const { label, file, key } = where(i);
    throw new ConfigError(
      `${label}: "${names[i]}" is not a first-party plugin; available: ${available.join(', ') || '(none)'}. For your own plugin files use --tools-dir DIR or ${toolsDir}/.`,
      file,
      key,
    );
  }
}
