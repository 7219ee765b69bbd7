// Finding plugin files. Nothing here imports or evaluates anything: discovery must be safe to run on
// an untrusted checkout.
import { availableFirstParty } from '../config/first-party.ts';
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/** Where a plugin came from; decides load order and whether trust is required. */
export type PluginOrigin = 'first-party' | 'user' | 'dir' | 'project';

export interface PluginCandidate {
  /** Absolute path of the plugin file: what reports and the tool's source name. */
  path: string;
  origin: PluginOrigin;
  /**
   * Project plugins only: the copy in the private snapshot folder that is imported instead of `path`,
   * and that folder, which its imports may not leave (snapshot.ts, confine.ts).
   */
  snapshot?: { file: string; root: string };
}

const PLUGIN_FILE = /\.(ts|js|mjs)$/;

/** The user's tools folder: <configDir>/tools. */
export function userToolsDir(configDir: string): string {
  return join(configDir, 'tools');
}

/** The project's tools folder: <cwd>/.conch/tools. */
export function projectToolsDir(cwd: string): string {
  return join(cwd, '.conch', 'tools');
}

/**
 * Plugin files in one folder: every *.ts, *.js, *.mjs at the top level and every <name>/index.ts one
 * level down, sorted so load order (and so collision winners) never depends on the filesystem.
 * Dotfiles (editor swap files, .DS_Store) and type declarations are ignored.
 * Returns null when the folder does not exist.
 */
export async function listPluginFiles(dir: string): Promise<string[] | null> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
  const files: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    const kind = entry.isSymbolicLink() ? await kindOf(full) : entry.isDirectory() ? 'dir' : entry.isFile() ? 'file' : null;
    if (kind === 'file' && PLUGIN_FILE.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(full);
    else if (kind === 'dir' && (await kindOf(join(full, 'index.ts'))) === 'file') files.push(join(full, 'index.ts'));
  }
  return files;
}

async function kindOf(path: string): Promise<'file' | 'dir' | null> {
  try {
    const info = await stat(path);
    return info.isFile() ? 'file' : info.isDirectory() ? 'dir' : null;
  } catch {
    return null;
  }
}

/**
 * Check first-party names before a run (--plugin NAME, config plugins: [...]). Returns a message
 * listing the available ones when a name is unknown, null when all are known.
 */
export async function checkFirstParty(names: string[]): Promise<string | null> {
  const available = await availableFirstParty();
  const unknown = names.filter((n) => !available.includes(n));
  if (unknown.length === 0) return null;
  return `unknown first-party plugin${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `'${n}'`).join(', ')}; available: ${available.join(', ') || '(none)'} (--plugin NAME or config "plugins")`;
}
