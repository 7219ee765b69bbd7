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
import { closeSync, constants, mkdirSync, openSync, readlinkSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { join, sep } from 'node:path';

/** O_PATH: open for lookups only, so directories we may search but not list can still be pinned. */
const O_PATH_BY_ARCH: Partial<Record<string, number>> = { x64: 0o10000000, arm64: 0o10000000, arm: 0o10000000, ia32: 0o10000000, riscv64: 0o10000000, loong64: 0o10000000, s390x: 0o10000000, ppc64: 0o10000000 };
const O_PATH = process.platform === 'linux' ? O_PATH_BY_ARCH[process.arch] ?? 0 : 0;
const DIR_FLAGS = (O_PATH || constants.O_RDONLY) | constants.O_DIRECTORY | constants.O_NOFOLLOW;

let procUsable: boolean | undefined;

/** Whether /proc/self/fd resolves our descriptors (false on macOS, or where /proc is not mounted). */
export function canPin(): boolean {
  if (procUsable !== undefined) return procUsable;
  if (process.platform !== 'linux') return (procUsable = false);
  try {
    const fd = openSync('/', DIR_FLAGS);
    try {
      procUsable = readlinkSync(`/proc/self/fd/${fd}`) === '/';
    } finally {
      closeSync(fd);
    }
  } catch {
    procUsable = false;
  }
  return procUsable;
}

/** Tag a walk failure with the component it concerns (its own message names a /proc path). */
function atComponent(error: unknown, path: string): Error {
  return Object.assign(error instanceof Error ? error : new Error(String(error)), { path });
}

function errorCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

export class PinnedDir {
  /** False where pinning is not possible: operations then go by path. */
  readonly pinned: boolean;

  private constructor(
    /** The canonical path the directory was pinned at. */
    readonly path: string,
    private fd: number | null,
  ) {
    this.pinned = fd !== null;
  }

  /**
   * Pin the directory at the canonical (symlink-free) path `dir`. With `create`, missing
   * directories are made on the way, each inside its pinned parent. Fails with the file system's
   * error (ENOENT, EACCES, ENOTDIR for a component that is a file or a symbolic link), whose `path`
   * is the component concerned.
   */
  static async open(dir: string, options: { create?: boolean } = {}): Promise<PinnedDir> {
    if (!canPin()) {
      if (options.create) await mkdir(dir, { recursive: true });
      return new PinnedDir(dir, null);
    }
    // Synchronous on purpose: a dozen open(2)s on directories take ~40 µs this way, more than ten
    // times that as thread-pool round trips, and this runs twice per write.
    let fd = openSync('/', DIR_FLAGS);
    let reached = '/';
    try {
      for (const name of dir.split(sep).filter((c) => c !== '' && c !== '.')) {
        if (name === '..') throw Object.assign(new Error(`not a canonical path: ${dir}`), { code: 'EINVAL' });
        reached = join(reached, name);
        const entry = `/proc/self/fd/${fd}/${name}`;
        let next: number;
        try {
          next = openSync(entry, DIR_FLAGS);
        } catch (error) {
          if (!options.create || errorCode(error) !== 'ENOENT') throw atComponent(error, reached);
          try {
            mkdirSync(entry);
          } catch (e) {
            // Someone else made it meanwhile: fine, the open below decides what it is.
            if (errorCode(e) !== 'EEXIST') throw atComponent(e, reached);
          }
          try {
            next = openSync(entry, DIR_FLAGS);
          } catch (e) {
            throw atComponent(e, reached);
          }
        }
        closeSync(fd);
        fd = next;
      }
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    return new PinnedDir(dir, fd);
  }

  /** A path naming `name` inside the pinned directory (not a symbolic link lookup on the way). */
  entry(name: string): string {
    return this.pinned ? `${this.self()}/${name}` : join(this.path, name);
  }

  private self(): string {
    // Falling back to the path after close() would silently reopen the race.
    if (this.fd === null) throw new Error(`pinned directory ${this.path} used after close()`);
    return `/proc/self/fd/${this.fd}`;
  }

  /** Where the pinned directory is now (it may have been moved or deleted since it was pinned). */
  location(): string {
    return this.pinned ? readlinkSync(this.self()) : this.path;
  }

  /** True while the directory is still at the path it was pinned at. */
  inPlace(): boolean {
    return this.location() === this.path;
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

  close(): void {
    const fd = this.fd;
    this.fd = null;
    if (fd !== null) closeSync(fd);
  }
}
