// Which sandbox profiles a user can choose: every *.json in sandbox-profiles/ except the data files
// that other modules read by name. Adding a profile is adding a file; no code lists them. Only the
// folder is listed (once per process, on first use): a profile's JSON is parsed when a command
// runs under it (profiles.ts), so neither a start nor a config check pays for reading profiles.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../core/package-root.ts';

export const PROFILES_DIR = join(PACKAGE_ROOT, 'sandbox-profiles');

/** What commands get when nothing names a profile. */
export const DEFAULT_PROFILE = 'workspace-write';
/** What read-only mode (--read-only, a run in $HOME, a denied workspace) runs commands under. */
export const READ_ONLY_PROFILE = 'read-only';

/** The JSON files of sandbox-profiles/ that are not profiles (secrets.ts, caches.ts, net-rules.ts, protected paths). */
export const DATA_FILES: ReadonlySet<string> = new Set(['protected', 'secrets', 'caches', 'network']);

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// The shipped folder does not change while conch runs; another folder (a test's) is listed afresh.
let shipped: string[] | null = null;

/** The selectable profile names, sorted. */
export function listProfiles(dir: string = PROFILES_DIR): string[] {
  if (dir === PROFILES_DIR && shipped) return [...shipped];
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((file) => file.endsWith('.json'))
      .map((file) => file.slice(0, -'.json'.length))
      .filter((name) => NAME.test(name) && !DATA_FILES.has(name))
      .sort();
  } catch {
    names = [];
  }
  if (dir === PROFILES_DIR) shipped = names;
  return [...names];
}

/** The names as help and schema messages offer them: the default first, then the rest. */
export function profileChoices(dir: string = PROFILES_DIR): string[] {
  const names = listProfiles(dir);
  return names.includes(DEFAULT_PROFILE) ? [DEFAULT_PROFILE, ...names.filter((n) => n !== DEFAULT_PROFILE)] : names;
}

/** One line for help text: 'workspace-write (default) or read-only'. */
export function profileChoicesText(dir: string = PROFILES_DIR): string {
  const shown = profileChoices(dir).map((n) => (n === DEFAULT_PROFILE ? `${n} (default)` : n));
  return shown.length > 1 ? `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}` : (shown[0] ?? '(none installed)');
}

/** Null when `name` is a selectable profile; otherwise the sentence saying so and what there is. */
export function unknownProfile(name: string, dir: string = PROFILES_DIR): string | null {
  if (listProfiles(dir).includes(name)) return null;
  return `unknown sandbox profile "${name}"; available: ${listProfiles(dir).join(', ')} (the profiles in ${dir})`;
}
