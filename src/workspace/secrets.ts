// Credential locations hidden by default (sandbox-profiles/secrets.json, data): the read tool
// refuses them and restricted shell commands see them empty (read-hidden.ts → sandbox/hidden.ts).
// A location can be taken out by name or path (read.allowSecret, user config only: config/secrets.ts), never
// silently; the run warns about each one.
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative, sep } from 'node:path';
import picomatch from 'picomatch';
import { PACKAGE_ROOT } from '../core/package-root.ts';
import { isWithin } from '../core/paths.ts';

export const SECRETS_FILE = join(PACKAGE_ROOT, 'sandbox-profiles', 'secrets.json');

export interface SecretEntry {
  name: string;
  /** As written in the data: ~/… or {configDir}/… */
  path: string;
  except?: string[];
}

export interface SecretLocation extends SecretEntry {
  /** Absolute. */
  absolute: string;
}

let cached: SecretEntry[] | null = null;

/** The built-in list; a broken file is an error naming it (the distribution is damaged). */
export function secretEntries(file: string = SECRETS_FILE): SecretEntry[] {
  if (cached && file === SECRETS_FILE) return cached;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read the secret locations ${file}: ${(error as Error).message}; restore it from the conch distribution.`);
  }
  const entries = (value as { entries?: unknown }).entries;
  const ok =
    Array.isArray(entries) &&
    entries.every(
      (e) =>
        typeof e?.name === 'string' &&
        typeof e?.path === 'string' &&
        /^(~|\{configDir\})(\/|$)/.test(e.path) &&
        (e.except === undefined || (Array.isArray(e.except) && e.except.every((x: unknown) => typeof x === 'string'))),
    );
  if (!ok) throw new Error(`${file} is malformed: expected { "entries": [{ "name", "path": "~/…", "except"?: [...] }] }; restore it from the conch distribution.`);
  if (file === SECRETS_FILE) cached = entries as SecretEntry[];
  return entries as SecretEntry[];
}

/** The entry a read.allowSecret item names (by name, or by its path as written), if any. */
export function findSecret(item: string, entries: SecretEntry[] = secretEntries()): SecretEntry | undefined {
  const trimmed = item.replace(/\/+$/, '');
  return entries.find((e) => e.name === item || e.path === trimmed);
}

/** The locations in force: the built-in list minus the allowed names, with absolute paths. */
export function secretLocations(configDir: string, allowed: string[] = [], home: string = homedir()): SecretLocation[] {
  return secretEntries()
    .filter((e) => !allowed.includes(e.name))
    .map((e) => {
      if (e.path.startsWith('~')) return { ...e, absolute: join(home, e.path.slice(1)) };
      // Messages name the folder itself: "{configDir}" is the file's placeholder, not a path anyone can look up.
      const absolute = join(configDir, e.path.slice('{configDir}'.length));
      return { ...e, absolute, path: isWithin(absolute, home) && absolute !== home ? `~/${relative(home, absolute)}` : absolute };
    });
}

function excepted(location: SecretLocation, path: string): boolean {
  if (!location.except?.length || path === location.absolute) return false;
  const first = relative(location.absolute, path).split(sep)[0]!;
  return picomatch.isMatch(first, location.except, { dot: true });
}

/** The location that hides one of these absolute paths (as written, canonical), or null. */
export function secretFor(locations: SecretLocation[], paths: string[]): SecretLocation | null {
  for (const location of locations) {
    if (paths.some((p) => isWithin(p, location.absolute) && !excepted(location, p))) return location;
  }
  return null;
}

/**
 * Concrete paths for the sandbox to hide: each location, or for a directory with exceptions each
 * of its entries but the excepted ones (the directory itself stays, read-only like all of $HOME).
 */
export function secretPathsToHide(locations: SecretLocation[]): string[] {
  const out: string[] = [];
  for (const location of locations) {
    if (!location.except?.length) {
      out.push(location.absolute);
      continue;
    }
    let names: string[] = [];
    try {
      names = readdirSync(location.absolute);
    } catch {
      continue; // absent or unreadable: nothing to hide
    }
    for (const name of names) if (!picomatch.isMatch(name, location.except, { dot: true })) out.push(join(location.absolute, name));
  }
  return out;
}
