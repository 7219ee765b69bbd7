// A directory held open by file descriptor, so that file operations "in" it act on the directory
// that was checked, whatever happens to its path meanwhile. The workspace policy decides on a
// canonical path; a concurrent command (a background job, another session) can then swap one of
// that path's directories for a symbolic link to .git or outside the workspace. Operations by path
// would follow the link; operations through the pinned directory cannot.
//
// Linux: the directory is reached one component at a time from `/`, each opened relative to the
// previous one through /proc/self/fd/N/<name> with O_NOFOLLOW | O_DIRECTORY, so a component that is
// (now) a symbolic link is refused instead of followed. Every later operation names its file as
// /proc/self/fd/N/<name>, which the kernel resolves from the pinned directory's inode.
//
// Elsewhere (macOS, or Linux without /proc) Node offers no *at() calls, so operations go by path
// and the check-then-write race remains: a documented limitation of those platforms.
import { constants } from 'node:fs';
import { mkdir, open, readlink, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';

/** O_PATH: open for lookups only, so directories we may search but not list can still be pinned. */
const O_PATH_BY_ARCH: Partial<Record<string, number>> = { x64: 0o10000000, arm64: 0o10000000, arm: 0o10000000, ia32: 0o10000000, riscv64: 0o10000000, loong64: 0o10000000, s390x: 0o10000000, ppc64: 0o10000000 };
const O_PATH = process.platform === 'linux' ? O_PATH_BY_ARCH[process.arch] ?? 0 : 0;
const DIR_FLAGS = (O_PATH || constants.O_RDONLY) | constants.O_DIRECTORY | constants.O_NOFOLLOW;

let procUsable: boolean | undefined;

/** Whether /proc/self/fd resolves our descriptors (false on macOS, or where /proc is not mounted). */
export async function canPin(): Promise<boolean> {
  if (procUsable !== undefined) return procUsable;
  if (process.platform !== 'linux') return (procUsable = false);
  try {
    const fh = await open('/', DIR_FLAGS);
    try {
      procUsable = (await readlink(`/proc/self/fd/${fh.fd}`)) === '/';
    } finally {
      await fh.close();
    }
  } catch {
    procUsable = false;
  }
  return procUsable;
}

/** A path component that was not a plain directory when it was reached. `path` is the component. */
function atComponent(error: unknown, path: string): Error {
  return Object.assign(error instanceof Error ? error : new Error(String(error)), { path });
}

export class PinnedDir {
  /** False where pinning is not possible: operations then go by path. */
  readonly pinned: boolean;

  private constructor(
    /** The canonical path the directory was pinned at. */
    readonly path: string,
    private handle: FileHandle | null,
  ) {
    this.pinned = handle !== null;
  }

  /**
   * Pin the directory at the canonical (symlink-free) path `dir`. With `create`, missing
   * directories are made on the way, each inside its pinned parent. Fails with the file system's
   * error (ENOENT, EACCES, ENOTDIR for a component that is a file or a symbolic link), whose `path`
   * is the component concerned.
   */
  static async open(dir: string, options: { create?: boolean } = {}): Promise<PinnedDir> {
    if (!(await canPin())) {
      if (options.create) await mkdir(dir, { recursive: true });
      return new PinnedDir(dir, null);
    }
    let handle = await open('/', DIR_FLAGS);
    let reached = '/';
    try {
      for (const name of dir.split(sep).filter((c) => c !== '' && c !== '.')) {
        if (name === '..') throw Object.assign(new Error(`not a canonical path: ${dir}`), { code: 'EINVAL' });
        reached = join(reached, name);
        const entry = `/proc/self/fd/${handle.fd}/${name}`;
        let next: FileHandle;
        try {
          next = await open(entry, DIR_FLAGS);
        } catch (error) {
          if (!options.create || (error as { code?: string }).code !== 'ENOENT') throw atComponent(error, reached);
          // Someone else may create it meanwhile: EEXIST is fine, the open below decides.
          await mkdir(entry).catch((e) => ((e as { code?: string }).code === 'EEXIST' ? undefined : Promise.reject(atComponent(e, reached))));
          next = await open(entry, DIR_FLAGS).catch((e) => Promise.reject(atComponent(e, reached)));
        }
        await handle.close();
        handle = next;
      }
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
    return new PinnedDir(dir, handle);
  }

  /** A path naming `name` inside the pinned directory (not a symbolic link lookup on the way). */
  entry(name: string): string {
    return this.pinned ? `${this.self()}/${name}` : join(this.path, name);
  }

  private self(): string {
    // Falling back to the path after close() would silently reopen the race.
    if (!this.handle) throw new Error(`pinned directory ${this.path} used after close()`);
    return `/proc/self/fd/${this.handle.fd}`;
  }

  /** Where the pinned directory is now (it may have been moved or deleted since it was pinned). */
  async location(): Promise<string> {
    return this.pinned ? readlink(this.self()) : this.path;
  }

  /** True while the directory is still at the path it was pinned at. */
  async inPlace(): Promise<boolean> {
    return (await this.location()) === this.path;
  }

  /** Make renames in the directory durable. Not every platform can fsync a directory: best effort. */
  async sync(): Promise<void> {
    try {
      // An O_PATH descriptor cannot be fsynced; reopen the same inode through /proc for that.
      const fh = await open(this.pinned ? this.self() : this.path, constants.O_RDONLY | constants.O_DIRECTORY);
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch {
      // best effort
    }
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.close().catch(() => {});
  }
}
