// The first-party plugins shipped in conch's plugins/ folder, by name: config checks the names a
// user gives (--plugin, "plugins"), plugins/load.ts loads them.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../core/package-root.ts';

export const FIRST_PARTY_DIR = join(PACKAGE_ROOT, 'plugins');

/** Every folder of plugins/ with an index.ts, sorted. */
export async function availableFirstParty(): Promise<string[]> {
  const entries = (await readdir(FIRST_PARTY_DIR).catch(() => [] as string[])).sort();
  const names: string[] = [];
  for (const name of entries) {
    if (name.startsWith('.')) continue;
    const index = await stat(join(FIRST_PARTY_DIR, name, 'index.ts')).catch(() => null);
    if (index?.isFile()) names.push(name);
  }
  return names;
}
