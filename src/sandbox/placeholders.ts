// Placeholders: empty files or directories conch creates on the host at a protected name that does
// not exist yet, so bubblewrap has something to bind read-only over it. They must not outlive the
// commands that need them, and several sandboxed commands may overlap (background jobs, parallel
// tool calls), so they are reference-counted per path within this process. Every operation on a path
// runs under that path's lock, so "last release removes it" can never race "next acquire reuses it".
//
// Removal is conservative: only the very inode conch created, and only while it is still empty. If
// the user (or another process) put something there in the meantime, it is theirs and stays.
//
// Limits, honestly: the count is per process. Two conch processes on one workspace each create or
// reuse what they find; a placeholder left by the other process looks like a real path and is simply
// protected. If conch is killed with SIGKILL, its placeholders stay behind (empty, harmless).
import { lstatSync, rmdirSync, unlinkSync, type Stats } from 'node:fs';
import { lstat, mkdir, open, realpath, rmdir, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { PathKind } from './protected-paths.ts';

interface Entry {
  count: number;
  kind: PathKind;
  dev: number;
  ino: number;
}

export interface PlaceholderLease {
  readonly path: string;
  release(): Promise<void>;
}

const entries = new Map<string, Entry>();
const locks = new Map<string, Promise<void>>();
let exitHookInstalled = false;

function withLock<T>(path: string, fn: () => Promise<T>): Promise<T> {
  const previous = locks.get(path) ?? Promise.resolve();
  const result = previous.then(fn);
  const tail = result.then(
    () => undefined,
    () => undefined,
  );
  locks.set(path, tail);
  void tail.then(() => {
    if (locks.get(path) === tail) locks.delete(path);
  });
  return result;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A normal exit with commands still running (or a caller that forgot release) must not leave
  // placeholders in the user's workspace.
  process.on('exit', () => {
    for (const [path, entry] of entries) removeSync(path, entry);
    entries.clear();
  });
}

function same(info: Stats, entry: Entry): boolean {
  return info.dev === entry.dev && info.ino === entry.ino;
}

function removeSync(path: string, entry: Entry): void {
  try {
    const info = lstatSync(path);
    if (!same(info, entry)) return;
    if (entry.kind === 'dir') rmdirSync(path);
    else if (info.size === 0) unlinkSync(path);
  } catch {
    // gone already, or no longer empty: either way nothing of ours to remove
  }
}

async function remove(path: string, entry: Entry): Promise<void> {
  try {
    const info = await lstat(path);
    if (!same(info, entry)) return;
    if (entry.kind === 'dir') await rmdir(path);
    else if (info.size === 0) await unlink(path);
  } catch {
    // as above
  }
}

/**
 * Every protected path a command needs goes through here, existing or not, under the path's lock:
 * - a live placeholder of ours: shared (count + 1);
 * - something real: null, it is protected as it is and never removed;
 * - nothing: a placeholder is created.
 * Deciding "real or ours" anywhere else would race with the release of another command.
 * The parent must already be a real directory (it is re-checked: no placeholder through a symlink).
 */
export async function acquirePlaceholder(path: string, kind: PathKind): Promise<PlaceholderLease | null> {
  installExitHook();
  return withLock(path, async () => {
    const existing = entries.get(path);
    if (existing) {
      existing.count++;
      return lease(path);
    }
    try {
      await lstat(path);
      return null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const parent = dirname(path);
    if ((await realpath(parent)) !== parent) {
      throw new Error(`placeholder parent ${parent} is not canonical (changed while preparing the sandbox)`);
    }
    try {
      if (kind === 'dir') await mkdir(path, 0o755);
      else await (await open(path, 'wx', 0o644)).close();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
      throw error;
    }
    const info = await lstat(path);
    entries.set(path, { count: 1, kind, dev: info.dev, ino: info.ino });
    return lease(path);
  });
}

function lease(path: string): PlaceholderLease {
  let released = false;
  return {
    path,
    release: () => {
      if (released) return Promise.resolve();
      released = true;
      return withLock(path, async () => {
        const entry = entries.get(path);
        if (!entry) return;
        entry.count--;
        if (entry.count > 0) return;
        entries.delete(path);
        await remove(path, entry);
      });
    },
  };
}

/** Paths with a live placeholder and their counts (for tests and diagnostics). */
export function livePlaceholders(): Map<string, number> {
  return new Map([...entries].map(([path, entry]) => [path, entry.count]));
}
