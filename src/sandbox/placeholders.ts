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
// reuse what they find; a placeholder left by the other process looks like a real path and is simply
// protected. If conch is killed with SIGKILL, its placeholders stay behind (empty, harmless).
import { closeSync, linkSync, lstatSync, mkdirSync, openSync, realpathSync, rmdirSync, unlinkSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { ProtectedPathError, type PathKind } from './protected-paths.ts';

interface Entry {
  count: number;
  kind: PathKind;
  dev: number;
  ino: number;
}

export interface PlaceholderLease {
  readonly path: string;
  /** Drop this reference; the last one removes the placeholder. Safe to call twice. */
  release(): void;
}

const entries = new Map<string, Entry>();
const SHARE_INODES = process.getuid?.() !== 0;
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A normal exit with commands still running (or a caller that forgot release) must not leave
  // placeholders in the user's workspace.
  process.on('exit', () => {
    for (const [path, entry] of entries) remove(path, entry);
    entries.clear();
  });
}

function same(info: Stats, entry: Entry): boolean {
  return info.dev === entry.dev && info.ino === entry.ino;
}

function remove(path: string, entry: Entry): void {
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
 * - something real: null, it is protected as it is and never removed;
 * - nothing: a placeholder is created.
 * Deciding "real or ours" anywhere else would race with the release of another command.
 * The parent must already be a real directory (it is re-checked: no placeholder through a symlink).
 */
export function acquirePlaceholder(path: string, kind: PathKind, linkTo?: string): PlaceholderLease | null {
  installExitHook();
  const existing = entries.get(path);
  if (existing) {
    existing.count++;
    return lease(path);
  }
  try {
    lstatSync(path);
    return null;
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
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw error;
  }
  const info = lstatSync(path);
  entries.set(path, { count: 1, kind, dev: info.dev, ino: info.ino });
  return lease(path);
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

function lease(path: string): PlaceholderLease {
  let released = false;
  return {
    path,
    release: () => {
      if (released) return;
      released = true;
      const entry = entries.get(path);
      if (!entry) return;
      entry.count--;
      if (entry.count > 0) return;
      entries.delete(path);
      remove(path, entry);
    },
  };
}

/** Paths with a live placeholder and their counts (for tests and diagnostics). */
export function livePlaceholders(): Map<string, number> {
  return new Map([...entries].map(([path, entry]) => [path, entry.count]));
}
