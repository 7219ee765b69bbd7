// The map's index: per file its size, mtime, hash, line count and (for parsed languages) symbols.
// Kept in the user's cache folder, keyed by the canonical workspace root, never in the workspace.
// Each use re-walks the tree: a file whose mtime and size are unchanged is taken as it is; otherwise
// its bytes are hashed, and only a file whose hash changed is parsed again.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { conchCacheDir } from 'conch';
import { grammarFor, parseSource, type MapSymbol } from './parse.ts';
import { readRegular, walk } from './walk.ts';

export interface FileEntry {
  size: number;
  mtimeMs: number;
  hash: string;
  lines: number;
  binary?: boolean;
  grammar?: string;
  head?: string;
  symbols?: MapSymbol[];
}

export interface MapIndex {
  version: number;
  root: string;
  files: Record<string, FileEntry>;
}

export interface UpdateStats {
  files: number;
  hashed: number;
  parsed: number;
  removed: number;
}

const VERSION = 1;
/** Larger files are listed and counted, not parsed: generated bundles would cost more than they tell. */
const MAX_PARSE_BYTES = 1024 * 1024;

export function cacheDir(env: Record<string, string | undefined> = process.env): string {
  return join(conchCacheDir(env), 'map');
}

/** Where the index of one root lives; null when the cache folder is inside the workspace itself. */
export function indexFile(root: string, env: Record<string, string | undefined> = process.env): string | null {
  const dir = cacheDir(env);
  if (dir === root || dir.startsWith(root.endsWith(sep) ? root : root + sep)) return null;
  return join(dir, `${createHash('sha256').update(root).digest('hex').slice(0, 24)}.json`);
}

const memory = new Map<string, MapIndex>();

async function loadIndex(root: string, file: string | null): Promise<MapIndex> {
  const held = memory.get(root);
  if (held) return held;
  if (file) {
    try {
      const stored = JSON.parse(await readFile(file, 'utf8')) as MapIndex;
      if (stored.version === VERSION && stored.root === root && stored.files) return stored;
    } catch {
      // absent or unreadable: build afresh
    }
  }
  return { version: VERSION, root, files: {} };
}

/**
 * Bring the index of `root` up to date and return it. `allowed` is the read policy for a
 * workspace-relative path. The stored index is only a cache: failing to write it costs speed.
 */
export async function updateIndex(
  root: string,
  allowed: (path: string) => Promise<boolean>,
  options: { signal?: AbortSignal; env?: Record<string, string | undefined> } = {},
): Promise<{ index: MapIndex; stats: UpdateStats }> {
  const file = indexFile(root, options.env);
  const previous = await loadIndex(root, file);
  const walked = await walk(root, allowed, options.signal);
  const files: Record<string, FileEntry> = {};
  const stats: UpdateStats = { files: walked.length, hashed: 0, parsed: 0, removed: 0 };
  for (const found of walked) {
    options.signal?.throwIfAborted();
    const old = previous.files[found.path];
    if (old && old.size === found.size && old.mtimeMs === found.mtimeMs) {
      files[found.path] = old;
      continue;
    }
    const bytes = await readRegular(join(root, found.path)).catch(() => null);
    if (!bytes) continue;
    stats.hashed++;
    const hash = createHash('sha1').update(bytes).digest('hex');
    if (old && old.hash === hash) {
      files[found.path] = { ...old, size: found.size, mtimeMs: found.mtimeMs };
      continue;
    }
    files[found.path] = await describe(found.path, bytes, found, hash);
    if (files[found.path]!.symbols) stats.parsed++;
  }
  stats.removed = Object.keys(previous.files).filter((p) => !(p in files)).length;
  const index: MapIndex = { version: VERSION, root, files };
  memory.set(root, index);
  if (file && (stats.hashed > 0 || stats.removed > 0 || Object.keys(previous.files).length !== walked.length)) await save(file, index);
  return { index, stats };
}

async function describe(path: string, bytes: Buffer, found: { size: number; mtimeMs: number }, hash: string): Promise<FileEntry> {
  const entry: FileEntry = { size: found.size, mtimeMs: found.mtimeMs, hash, lines: 0 };
  if (bytes.subarray(0, 8192).includes(0)) return { ...entry, binary: true };
  const text = bytes.toString('utf8');
  entry.lines = text.length === 0 ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const grammar = grammarFor(path);
  if (!grammar || bytes.length > MAX_PARSE_BYTES) return entry;
  const parsed = await parseSource(grammar, text).catch(() => null);
  if (!parsed) return entry;
  return { ...entry, grammar, head: parsed.head, symbols: parsed.symbols };
}

async function save(file: string, index: MapIndex): Promise<void> {
  try {
    await mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(index), { mode: 0o600 });
    await rename(tmp, file);
  } catch {
    // a read-only cache only costs speed
  }
}

/** Forget what this process holds (tests, the bench): the next update starts from the stored file. */
export function forgetMemory(): void {
  memory.clear();
}
