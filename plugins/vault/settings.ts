// The vault's settings (plugins.vault in the user config) and its confinement: one root, narrowed
// by allow and deny subtrees (deny wins), dot folders (.obsidian, .trash, .git) hidden. Decisions
// are made on canonical paths (symlinks and '..' resolved) and on the path as given, like the
// workspace policy, so a link can neither lead out of the vault nor into a denied subtree.
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { canonicalize, isWithin } from 'conch';

export interface VaultSettings {
  /** Canonical root. */
  root: string;
  /** Canonical subtrees the vault is narrowed to (empty: the whole root). */
  allow: string[];
  /** Canonical subtrees hidden from every vault tool. */
  deny: string[];
}

const KEYS = ['root', 'allow', 'deny'];

/** The settings, checked; a problem is thrown with a message that names the key and the fix. */
export async function loadSettings(raw: Record<string, unknown>, configFile: string): Promise<VaultSettings> {
  const where = configFile.startsWith(`${homedir()}/`) ? `~/${relative(homedir(), configFile)}` : configFile;
  // firstParty too: a user who enabled it as "plugins": ["vault"] and replaced that with the example must still have it on.
  const example = `"plugins": { "firstParty": ["vault"], "vault": { "root": "~/notes" } }`;
  const unknown = Object.keys(raw).filter((k) => !KEYS.includes(k));
  if (unknown.length) throw new Error(`plugins.vault.${unknown[0]} in ${where} is not a vault setting; the settings are ${KEYS.join(', ')}.`);
  if (raw.root === undefined) {
    throw new Error(`the vault plugin needs the folder of your notes: add ${example} to ${where} (an absolute path or ~/…). It never defaults to your home directory.`);
  }
  if (typeof raw.root !== 'string' || raw.root.trim() === '') throw new Error(`plugins.vault.root in ${where} must be a folder path, such as "~/notes".`);
  const given = raw.root === '~' || raw.root.startsWith('~/') ? join(homedir(), raw.root.slice(1)) : raw.root;
  if (!isAbsolute(given)) throw new Error(`plugins.vault.root in ${where} is "${raw.root}": write an absolute path or ~/… (a relative one would depend on where conch starts).`);
  const root = await canonicalize(given);
  const st = await stat(root).catch(() => null);
  if (!st?.isDirectory()) throw new Error(`plugins.vault.root in ${where} is "${raw.root}", which is ${st ? 'not a folder' : 'missing'}: point it at the folder of your notes.`);
  const home = await canonicalize(homedir());
  if (isWithin(home, root)) {
    throw new Error(`plugins.vault.root in ${where} is "${raw.root}", your home directory${root === home ? '' : ' or a folder that contains it'}: point it at the vault's own folder, such as "~/notes".`);
  }
  const subtrees = async (key: 'allow' | 'deny'): Promise<string[]> => {
    const value = raw[key];
    if (value === undefined) return [];
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
      throw new Error(`plugins.vault.${key} in ${where} must be a list of folders inside the vault root, such as ["Journal", "Work/Private"].`);
    }
    return Promise.all(
      (value as string[]).map(async (v) => {
        const abs = await canonicalize(resolve(root, v));
        if (!isWithin(abs, root)) throw new Error(`plugins.vault.${key} in ${where} names "${v}", which is outside the vault root: use folders inside it.`);
        return abs;
      }),
    );
  };
  // conch's own folder (config, plugins, AGENTS.md) is never part of a vault: a note written there would steer every later run.
  const conch = await canonicalize(dirname(configFile));
  return { root, allow: await subtrees('allow'), deny: [...(await subtrees('deny')), conch] };
}

/** Root-relative, '/'-separated form of a path inside the root ('' for the root itself). */
export function relativeTo(root: string, abs: string): string {
  return relative(root, abs).split(sep).join('/');
}

/**
 * Whether a canonical absolute path is part of the vault: inside the root, no dot segment, inside an
 * allow subtree (when there are any), in no deny subtree. Folders on the way to an allow subtree are
 * visible (to walk through), the notes in them are not.
 */
export function visible(s: VaultSettings, abs: string, kind: 'note' | 'folder'): boolean {
  if (!isWithin(abs, s.root)) return false;
  const rel = relativeTo(s.root, abs);
  if (rel !== '' && rel.split('/').some((part) => part.startsWith('.'))) return false;
  if (s.deny.some((d) => isWithin(abs, d))) return false;
  if (s.allow.length === 0 || s.allow.some((a) => isWithin(abs, a))) return true;
  return kind === 'folder' && s.allow.some((a) => isWithin(a, abs));
}
