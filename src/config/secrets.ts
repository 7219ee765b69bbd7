// read.allowSecret: which built-in credential locations (workspace/secrets.ts) a run leaves
// readable. Only the user config may name one (a cloned repository's config must not re-open
// ~/.ssh); an unknown name is an error; every location taken out is said on stderr at each run.
import { ConfigError } from '../core/errors.ts';
import { findSecret, secretEntries, secretLocations, type SecretLocation } from '../workspace/secrets.ts';
import type { ConfigFile } from './file.ts';

export function secretPolicy(files: ConfigFile[], configDir: string, home: string, cwd: string, warnings: string[]): SecretLocation[] {
  const allowed: string[] = [];
  for (const { kind, file, value } of files) {
    const items = value.read?.allowSecret ?? [];
    if (items.length === 0) continue;
    if (kind === 'project') {
      warnings.push(`${file}: "read.allowSecret" ignored: only your user config can make a credential location readable.`);
      continue;
    }
    for (const [i, item] of items.entries()) {
      const entry = findSecret(item);
      if (!entry) {
        const names = secretEntries().map((e) => e.name).join(', ');
        throw new ConfigError(`${file}: "read.allowSecret[${i}]" is "${item}", which is no built-in secret location; use one of: ${names} (or its path, e.g. "~/.npmrc").`, file, `read.allowSecret[${i}]`);
      }
      allowed.push(entry.name);
      warnings.push(`${file}: read.allowSecret makes ${entry.path} (${entry.name}) readable by the read tool and shell commands.`);
    }
  }
  const locations = secretLocations(configDir, allowed, home);
  // Working inside one (a password store, conch's config directory) is the user's explicit choice.
  return locations.filter((l) => {
    const contains = cwd === l.absolute || cwd.startsWith(`${l.absolute}/`);
    if (contains) warnings.push(`the workspace ${cwd} is inside the credential location ${l.path} (${l.name}); it stays readable in this run.`);
    return !contains;
  });
}
