// The vault's index kept between processes: for each note the key of the version that was parsed
// (inode, size, mtime) and its parse, in conch's cache folder ($XDG_CACHE_HOME/conch/vault), one
// file per vault root. It is only a cache: a missing, corrupt or foreign-version file is ignored and
// rebuilt, a write that fails costs speed. Written whole to a temporary file and renamed over the
// old one, so a killed run leaves the previous file or the new one, and two processes at once each
// leave a complete file (the last rename wins; an entry it lacks is simply parsed again).
// It holds only what the run that wrote it could see: notes outside allow, in deny subtrees or
// refused by the read policy are never in the index, so never written.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { conchCacheDir, isWithin } from 'conch';
import type { ParsedNote } from './parse.ts';

export interface CachedNote {
  key: string;
  parsed: ParsedNote;
}

export interface LoadedCache {
  notes: Map<string, CachedNote>;
  /** Something in the file was left out (unusable, racy or malformed entries): rewrite it. */
  stale: boolean;
}

const VERSION = 1;
/**
 * An entry whose mtime is this close to (or after) when its index was taken is not trusted: an edit
 * right after the parse can keep the size and, on a coarse file-system clock, the mtime (as git's
 * "racily clean" entries). Such notes are parsed again by the next process.
 */
const RACY_MS = 2000;
/** A larger file is not ours (100,000 notes take some 60 MB). */
const MAX_CACHE_BYTES = 256 * 1024 * 1024;
/** Temporary files of runs killed mid-write are removed once this old. */
const ORPHAN_MS = 10 * 60 * 1000;

/** Where the index of the vault at `root` (canonical) is kept; null when the cache folder is inside the vault. */
export function cacheFile(root: string, env: Record<string, string | undefined> = process.env): string | null {
  const dir = join(conchCacheDir(env), 'vault');
  if (isWithin(dir, root)) return null;
  return join(dir, `${createHash('sha256').update(root).digest('hex').slice(0, 24)}.json`);
}

const EMPTY = (): LoadedCache => ({ notes: new Map(), stale: true });

export async function loadCache(file: string | null, root: string): Promise<LoadedCache> {
  if (!file) return EMPTY();
  let stored: unknown;
  try {
    if ((await stat(file)).size > MAX_CACHE_BYTES) return EMPTY();
    stored = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return EMPTY(); // absent, unreadable or not JSON
  }
  const s = stored as { version?: unknown; root?: unknown; savedAt?: unknown; notes?: unknown };
  if (!s || s.version !== VERSION || s.root !== root || typeof s.savedAt !== 'number' || !isObject(s.notes)) return EMPTY();
  const loaded: LoadedCache = { notes: new Map(), stale: false };
  for (const [path, entry] of Object.entries(s.notes)) {
    if (validEntry(entry) && mtimeOf(entry.key) <= s.savedAt - RACY_MS) loaded.notes.set(path, entry);
    else loaded.stale = true;
  }
  return loaded;
}

/** Store the index taken at `takenAt` (ms, before its first stat); never throws. */
export async function saveCache(file: string | null, root: string, notes: Iterable<[string, CachedNote]>, takenAt: number): Promise<void> {
  if (!file) return;
  const kept: Record<string, CachedNote> = {};
  for (const [path, entry] of notes) if (plainJson(entry.parsed.frontmatter)) kept[path] = entry;
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await removeOrphans(file);
    await writeFile(tmp, JSON.stringify({ version: VERSION, root, savedAt: takenAt, notes: kept }), { mode: 0o600, flag: 'wx' });
    await rename(tmp, file);
  } catch {
    await rm(tmp, { force: true }).catch(() => {});
  }
}

async function removeOrphans(file: string): Promise<void> {
  const prefix = `${basename(file)}.`;
  for (const name of await readdir(dirname(file)).catch(() => [] as string[])) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const at = join(dirname(file), name);
    const st = await stat(at).catch(() => null);
    if (st && st.mtimeMs < Date.now() - ORPHAN_MS) await rm(at, { force: true }).catch(() => {});
  }
}

function mtimeOf(key: string): number {
  const mtime = Number(key.split(':')[2]);
  return Number.isFinite(mtime) ? mtime : Infinity;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The shape the index relies on, checked whole: a hand-edited or half-foreign entry is parsed again instead. */
function validEntry(entry: unknown): entry is CachedNote {
  if (!isObject(entry) || !isString(entry.key) || !isObject(entry.parsed)) return false;
  const p = entry.parsed;
  return (
    (p.frontmatter === null || isObject(p.frontmatter)) &&
    (p.frontmatterError === undefined || isString(p.frontmatterError)) &&
    (p.title === null || isString(p.title)) &&
    isNumber(p.lines) &&
    (p.tooLarge === undefined || p.tooLarge === true) &&
    Array.isArray(p.aliases) && p.aliases.every(isString) &&
    Array.isArray(p.tags) && p.tags.every(isString) &&
    Array.isArray(p.headings) && p.headings.every((h) => isObject(h) && isNumber(h.depth) && isString(h.text) && isNumber(h.line)) &&
    Array.isArray(p.links) &&
    p.links.every(
      (l) =>
        isObject(l) && (l.kind === 'wiki' || l.kind === 'markdown') && isString(l.target) && typeof l.embed === 'boolean' &&
        isNumber(l.line) && isNumber(l.start) && isNumber(l.end) &&
        (l.heading === undefined || isString(l.heading)) && (l.alias === undefined || isString(l.alias)),
    )
  );
}

/** Whether JSON gives the value back as it is: YAML can yield .inf, .nan, dates or shared and cyclic nodes. */
function plainJson(value: unknown, seen = new Set<object>()): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object' || seen.has(value)) return false;
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return false;
  seen.add(value);
  const ok = Object.values(value).every((v) => plainJson(v, seen));
  seen.delete(value);
  return ok;
}
