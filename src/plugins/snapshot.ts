// Project plugin snapshots. The bytes of ./.conch/tools are read once, hashed, and written to a private
// per-user folder named by that hash; conch imports from there. What was hashed (and compared with the
// trusted hash) is therefore exactly what runs: a file changed in the workspace after the hash, or
// during the import, is not what gets imported.
import { closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, realpath, rename, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface FolderEntry {
  /** Path relative to the folder, '/'-separated. */
  rel: string;
  /** File bytes; null for a directory. */
  bytes: Buffer | null;
}

export interface FolderContent {
  /** sha256 over every relative name and byte, in the format `conch trust` records. */
  hash: string;
  entries: FolderEntry[];
}

/** Far above any plugin folder. A pull can make one entry a link to /usr or / (git keeps symlinks). */
export const FOLDER_MAX_BYTES = 64 * 1024 * 1024;
export const FOLDER_MAX_ENTRIES = 10_000;

/**
 * Read a folder whole: relative names and bytes of every file, recursively, in sorted order, hashed
 * as it is read. Symlinks are followed (their targets' bytes are what is hashed and copied); a
 * directory reached twice is hashed once so a link loop cannot hang us. Special files are named in
 * the hash but not read, and a file is opened non-blocking and checked after opening, so a FIFO
 * swapped in cannot stall startup. A missing folder reads as empty. Synchronous inside: a handful of
 * small files, where Bun's promise-based calls cost more than the reads. Beyond FOLDER_MAX_BYTES or
 * FOLDER_MAX_ENTRIES it throws, having read no file past the bound: held in memory and copied at
 * every start, a linked /usr took a minute and 8 GB.
 */
export async function readFolder(dir: string): Promise<FolderContent> {
  const hash = new Bun.CryptoHasher('sha256');
  const entries: FolderEntry[] = [];
  const seen = new Set<string>();
  let bytesSoFar = 0;
  let count = 0;
  const tooLarge = (what: string) => new Error(`${dir} holds more than ${what}, far more than any plugin folder (a link in it to a large folder?)`);
  const walk = (abs: string, rel: string): void => {
    let real: string;
    try {
      real = realpathSync(abs);
    } catch {
      return;
    }
    if (seen.has(real)) {
      hash.update(`loop\0${rel}\0`);
      return;
    }
    seen.add(real);
    for (const name of readdirSync(abs).sort()) {
      if (++count > FOLDER_MAX_ENTRIES) throw tooLarge(`${FOLDER_MAX_ENTRIES} entries`);
      const childAbs = join(abs, name);
      const childRel = rel ? `${rel}/${name}` : name;
      const info = statSync(childAbs, { throwIfNoEntry: false });
      if (info?.isFile() && bytesSoFar + info.size > FOLDER_MAX_BYTES) throw tooLarge(`${FOLDER_MAX_BYTES / 1024 / 1024} MiB`);
      if (!info) hash.update(`dangling\0${childRel}\0`);
      else if (info.isDirectory()) {
        hash.update(`d\0${childRel}\0`);
        entries.push({ rel: childRel, bytes: null });
        walk(childAbs, childRel);
      } else {
        const bytes = info.isFile() ? readRegular(childAbs, FOLDER_MAX_BYTES - bytesSoFar) : null;
        if (!bytes) {
          hash.update(`other\0${childRel}\0`);
          continue;
        }
        bytesSoFar += bytes.length;
        hash.update(`f\0${childRel}\0${bytes.length}\0`);
        hash.update(bytes);
        entries.push({ rel: childRel, bytes });
      }
    }
  };
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory()) walk(dir, '');
  return { hash: `sha256:${hash.digest('hex')}`, entries };
}

/**
 * The bytes of a regular file, or null when what is there now is not one (or cannot be read).
 * Throws when it holds more than `room` bytes (swapped or grown since its stat).
 */
function readRegular(path: string, room: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  let bytes: Buffer | null = null;
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return null;
    if (info.size <= room) bytes = readFileSync(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
  if (bytes === null || bytes.length > room) throw new Error(`${path} took the folder past the ${FOLDER_MAX_BYTES / 1024 / 1024} MiB a plugin folder may hold`);
  return bytes;
}

/** Snapshots not used for this long are removed when a new one is written. */
const PRUNE_AFTER_MS = 30 * 24 * 3600 * 1000;
const INCOMING = '.incoming-';

/**
 * Write `content` to <root>/<hex of its hash> and return that folder's real path. An existing
 * snapshot of the same hash is reused untouched (only its time is refreshed, which keeps it from
 * being pruned): the folder is private, and its name is the hash of the bytes conch itself wrote
 * there. A new one is assembled in a temporary folder and renamed into place, so a concurrent conch
 * never sees half a snapshot.
 */
export async function materialize(content: FolderContent, root: string): Promise<string> {
  const final = join(root, content.hash.replace(/^sha256:/, ''));
  const existing = await stat(final).catch(() => null);
  if (existing?.isDirectory()) {
    const now = new Date();
    await utimes(final, now, now).catch(() => {});
    return realpath(final);
  }
  const incoming = await mkdtemp(join(root, INCOMING));
  try {
    for (const entry of content.entries) {
      const target = join(incoming, entry.rel);
      if (entry.bytes === null) mkdirSync(target, { recursive: true, mode: 0o700 });
      else {
        mkdirSync(dirname(target), { recursive: true, mode: 0o700 });
        writeFileSync(target, entry.bytes, { mode: 0o600, flag: 'wx' });
      }
    }
    await rename(incoming, final);
  } catch (error) {
    await rm(incoming, { recursive: true, force: true });
    // Another conch wrote the same snapshot first: theirs has the same bytes.
    const raced = await stat(final).catch(() => null);
    if (!raced?.isDirectory()) throw error;
  }
  await prune(root, final);
  return realpath(final);
}

async function prune(root: string, keep: string): Promise<void> {
  const cutoff = Date.now() - PRUNE_AFTER_MS;
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const path = join(root, name);
    if (path === keep) continue;
    const info = await stat(path).catch(() => null);
    // An .incoming- folder older than a day was left by a conch that died mid-copy.
    const limit = name.startsWith(INCOMING) ? Date.now() - 24 * 3600 * 1000 : cutoff;
    if (info?.isDirectory() && info.mtimeMs < limit) await rm(path, { recursive: true, force: true }).catch(() => {});
  }
}

let processRoot: Promise<string> | undefined;

/**
 * Where snapshots live: <cacheDir>/snapshots, private to the user (conch's cache folder is protected
 * from the model by the workspace policy). Without a usable cache folder, a private temporary folder
 * for this process, removed when it exits.
 */
export async function snapshotRoot(cacheDir: string | false): Promise<string> {
  if (cacheDir !== false) {
    const root = join(cacheDir, 'snapshots');
    try {
      await mkdir(root, { recursive: true, mode: 0o700 });
      return root;
    } catch {
      // fall back to a temporary folder: an unwritable cache only costs the copy
    }
  }
  processRoot ??= mkdtemp(join(tmpdir(), 'conch-snapshots-')).then((dir) => {
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    return dir;
  });
  return processRoot;
}
