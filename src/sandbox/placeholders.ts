// Placeholders: empty files or directories conch creates on the host at a protected name that does
// not exist yet, so bubblewrap has something to bind read-only over it. They must not outlive the
// commands that need them, and several sandboxed commands may overlap (background jobs, parallel
// tool calls), so they are reference-counted per path within this process.
//
// Every operation is synchronous on purpose: a handful of local syscalls, done without yielding to
// the event loop, so "last release removes it" can never interleave with "next acquire reuses it"
// (no lock needed), and it is several times faster than the promise-based fs calls.
//
// Removal is conservative: only the very inode conch created, and only while it is still empty. If
// the user (or another process) put something there in the meantime, it is theirs and stays.
//
// File placeholders are mode 0444. When conch does not run as root, those made together share one
// inode: the first is created, the others are hard links to it (creating an inode costs ~40x a link
// on a journaling filesystem, and a command may need a dozen placeholders). The mode keeps the user's
// in-place writes out, so nothing written to one name can appear under another; an editor that saves
// by rename replaces the inode and keeps its file. Root ignores file modes, so as root every
// placeholder gets its own inode (slower, and nothing is ever shared).
//
// Limits, honestly: the count is per process. Two conch processes on one workspace each create or
// reuse what they find; a placeholder of the other process looks like a real path and is simply
// protected. If conch is killed without running its exit hook (SIGKILL), its placeholders stay
// behind until the next sandboxed command of any conch process of the same user removes them:
// every process records what it holds (placeholder-records.ts), and recoverPlaceholders() clears
// what dead processes left, without touching anything a user changed since.
import { closeSync, linkSync, lstatSync, mkdirSync, openSync, realpathSync, rmdirSync, unlinkSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { recoverLeftovers, saveRecords, type PlaceholderRecord } from './placeholder-records.ts';
import { ProtectedPathError, type PathKind } from './protected-paths.ts';

interface Entry extends PlaceholderRecord {
  count: number;
}

export interface PlaceholderLease {
  readonly path: string;
  /** True when the path is a placeholder of this process; false: something that existed, held as it is. */
  readonly placeholder: boolean;
  /** Drop this reference; the last one removes the placeholder. Safe to call twice. */
  release(): void;
}

const entries = new Map<string, Entry>();
/** Existing paths that running commands of this process hold as they are, with counts. */
const held = new Map<string, number>();
/** entries changed since the record was last written */
let dirty = false;
const SHARE_INODES = process.getuid?.() !== 0;
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A normal exit with commands still running (or a caller that forgot release) must not leave
  // placeholders in the user's workspace.
  process.on('exit', () => {
    const all = [...entries.values()];
    entries.clear();
    saveRecords([]);
    for (const entry of all) remove(entry);
  });
}

function same(info: Stats, entry: Entry): boolean {
  return info.dev === entry.dev && info.ino === entry.ino;
}

function remove(entry: Entry): void {
  const { path } = entry;
  try {
    const info = lstatSync(path);
    if (!same(info, entry)) return;
    if (entry.kind === 'dir') rmdirSync(path);
    else if (info.size === 0) unlinkSync(path);
  } catch {
    // gone already, or no longer empty: either way nothing of ours to remove
  }
}

/**
 * Every protected path a command needs goes through here, existing or not:
 * - a live placeholder of ours: shared (count + 1);
 * - something real: held as it is (counted, so recovery leaves it alone), never removed;
 * - nothing: a placeholder is created.
 * Deciding "real or ours" anywhere else would race with the release of another command.
 * The parent must already be a real directory (it is re-checked: no placeholder through a symlink).
 * Call recordPlaceholders() once the command's placeholders are made.
 */
export function acquirePlaceholder(path: string, kind: PathKind, linkTo?: string): PlaceholderLease {
  installExitHook();
  const existing = entries.get(path);
  if (existing) {
    existing.count++;
    return lease(path, true);
  }
  try {
    lstatSync(path);
    return hold(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const parent = dirname(path);
  if (realpathSync(parent) !== parent) {
    throw new ProtectedPathError(
      `the directory holding the protected path ${path} changed while conch prepared the sandbox (it is now a link or moved); run the command again.`,
    );
  }
  try {
    if (kind === 'dir') mkdirSync(path, 0o755);
    else if (!linkTo || !SHARE_INODES || !tryLink(linkTo, path)) closeSync(openSync(path, 'wx', 0o444));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return hold(path);
    throw error;
  }
  const info = lstatSync(path);
  entries.set(path, { path, count: 1, kind, dev: info.dev, ino: info.ino, mode: info.mode & 0o7777, birth: info.birthtimeMs });
  dirty = true;
  return lease(path, true);
}

function hold(path: string): PlaceholderLease {
  held.set(path, (held.get(path) ?? 0) + 1);
  return lease(path, false);
}

/** Link `path` to a live, still empty file placeholder of ours; false when that is not possible. */
function tryLink(source: string, path: string): boolean {
  const entry = entries.get(source);
  if (!entry || entry.kind !== 'file') return false;
  try {
    const info = lstatSync(source);
    if (!same(info, entry) || info.size !== 0) return false;
    linkSync(source, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error;
    return false; // another filesystem, or the source is gone: create instead
  }
}

/** Leases hand out their one reference through take(), so releaseAll can batch the record update. */
const takers = new WeakMap<PlaceholderLease, () => Entry | null>();

function lease(path: string, placeholder: boolean): PlaceholderLease {
  let released = false;
  const take = (): Entry | null => {
    if (released) return null;
    released = true;
    return placeholder ? drop(path) : unhold(path);
  };
  const item: PlaceholderLease = {
    path,
    placeholder,
    release: () => {
      const gone = take();
      if (gone) finish([gone]);
    },
  };
  takers.set(item, take);
  return item;
}

function unhold(path: string): null {
  const count = (held.get(path) ?? 1) - 1;
  if (count > 0) held.set(path, count);
  else held.delete(path);
  return null;
}

/** One reference less; the entry when that was the last one (for finish to remove). */
function drop(path: string): Entry | null {
  const entry = entries.get(path);
  if (!entry) return null;
  entry.count--;
  if (entry.count > 0) return null;
  entries.delete(path);
  dirty = true;
  return entry;
}

/** Take placeholders out of the record first, then remove them: a record never outlives its file. */
function finish(gone: Entry[]): void {
  recordPlaceholders();
  for (const entry of gone) remove(entry);
}

/** Release a command's leases with one record update. Safe to call twice. */
export function releaseAll(leases: PlaceholderLease[]): void {
  const gone: Entry[] = [];
  for (const item of leases) {
    const entry = takers.get(item)?.();
    if (entry) gone.push(entry);
  }
  if (gone.length > 0) finish(gone);
}

/** Write this process's record if placeholders were created or removed since the last write. */
export function recordPlaceholders(): void {
  if (!dirty) return;
  dirty = false;
  saveRecords([...entries.values()].map(({ path, kind, dev, ino, mode, birth }) => ({ path, kind, dev, ino, mode, birth })));
}

/**
 * Remove what conch processes that are gone left behind (see placeholder-records.ts), except paths
 * a running command of this process holds or shares. Cheap when there is nothing to do: one readdir.
 */
export function recoverPlaceholders(): void {
  recoverLeftovers((path) => held.has(path) || entries.has(path));
}

/** Paths with a live placeholder and their counts (for tests and diagnostics). */
export function livePlaceholders(): Map<string, number> {
  return new Map([...entries].map(([path, entry]) => [path, entry.count]));
}
