// Atomic file replacement: the new content goes to a private temporary file in the target's
// directory, is flushed, given the original's permissions, and only then renamed over the target.
// Until that rename the original is untouched; on any failure the temporary file is removed, and
// so it is when the process exits meanwhile (a second Ctrl-C); one a killed writer left is removed
// by the next write in that folder (temp-leftovers.ts).
// Every step goes through the pinned directory (see pinned-dir.ts), so a directory on the path
// swapped for a symbolic link meanwhile cannot send the file, or the temporary file, elsewhere.
import type { Stats } from 'node:fs';
import { link, lstat, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { PinnedDir } from './pinned-dir.ts';
import { sweepDeadTemps, TEMP_MARKER } from './temp-leftovers.ts';
import { randomHex } from '../core/random.ts';
import { removeAtExit } from '../process/exit-cleanup.ts';
import { selfTag } from '../process/identity.ts';

export interface AtomicWriteOptions {
  /** Permission bits of the result. Default: the existing file's, else 0o666 minus the umask. */
  mode?: number;
  /**
   * Create only: fail with an EEXIST error if the target exists, decided atomically by the file
   * system (hard link), never by a check followed by a write.
   */
  createOnly?: boolean;
  /**
   * The target's directory, already pinned (and checked) by the caller, who also closes it.
   * Default: dirname(target), pinned for this call; it must exist.
   */
  dir?: PinnedDir;
  /** Runs after the temporary file is complete and flushed, just before it replaces the target. Tests inject failures here; tools re-check freshness here. */
  beforeRename?: (tempPath: string) => void | Promise<void>;
}

export { TEMP_MARKER };

function errorCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

/** The writer's tag in the name tells a later write whether this file's writer is dead (temp-leftovers.ts). */
export function tempNameFor(name: string): string {
  const tag = selfTag();
  // Under NAME_MAX (255) whatever the target's name length: 1 + 170 + 11 + at most 10+1+10+1+20+1 + 12,
  // and 8 more for a backup's name (atomic-set.ts).
  return `.${name.slice(0, 170)}${TEMP_MARKER}${tag ? `${tag.ns}-${tag.pid}-${tag.start}-` : ''}${randomHex(6)}`;
}

/** Create the private temporary file `name` in `dir`, removed at exit unless `done` (returned) runs first. */
export async function openTemp(dir: PinnedDir, name: string): Promise<{ fh: Awaited<ReturnType<typeof open>>; done: () => void }> {
  // 'wx' + 0o600: a unique name nobody else can have opened, readable by us alone until complete.
  const fh = await open(dir.entry(name), 'wx', 0o600);
  return { fh, done: removeAtExit(dir.entry(name)) };
}

export function defaultMode(): number {
  return 0o666 & ~process.umask();
}

/** `target` must be canonical: on Linux a symbolic link anywhere on its directory path is refused (ENOTDIR), not followed. */
export async function writeFileAtomic(target: string, data: Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = options.dir ?? (await PinnedDir.open(dirname(target)));
  try {
    await writeInto(dir, basename(target), data, options);
  } finally {
    if (!options.dir) dir.close();
  }
}

async function writeInto(dir: PinnedDir, name: string, data: Uint8Array, options: AtomicWriteOptions): Promise<void> {
  const target = dir.entry(name);
  // lstat: a symbolic link put here meanwhile is replaced, never followed, so its target's owner is not copied either.
  const existing = options.createOnly ? null : await lstat(target).catch((e) => (errorCode(e) === 'ENOENT' ? null : Promise.reject(e)));
  const mode = options.mode ?? (existing?.isFile() ? existing.mode & 0o7777 : defaultMode());
  await sweepDeadTemps(dir);
  const tempName = tempNameFor(name);
  const temp = dir.entry(tempName);
  const { fh, done } = await openTemp(dir, tempName);
  let closed = false;
  try {
    await writeAll(fh, data);
    if (existing?.isFile()) await keepOwner(fh, existing);
    await fh.chmod(mode);
    await fh.sync();
    await fh.close();
    closed = true;
    await options.beforeRename?.(temp);
    if (options.createOnly) await linkExclusive(temp, target, data, mode);
    else await rename(temp, target);
  } catch (error) {
    if (!closed) await fh.close().catch(() => {});
    await unlink(temp).catch(() => {});
    done();
    throw error;
  }
  if (options.createOnly) await unlink(temp).catch(() => {});
  done();
  await dir.sync();
}

export async function writeAll(fh: Awaited<ReturnType<typeof open>>, data: Uint8Array): Promise<void> {
  for (let offset = 0; offset < data.length; ) {
    const { bytesWritten } = await fh.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/** When run as root on someone else's file, the replacement must stay theirs. */
export async function keepOwner(fh: Awaited<ReturnType<typeof open>>, original: Stats): Promise<void> {
  if (process.getuid?.() !== 0) return;
  if (original.uid === 0 && original.gid === 0) return;
  await fh.chown(original.uid, original.gid).catch(() => {});
}

/** link(2) fails with EEXIST if the target exists: the create-if-absent decision is the kernel's. */
async function linkExclusive(temp: string, target: string, data: Uint8Array, mode: number): Promise<void> {
  try {
    await link(temp, target);
  } catch (error) {
    const code = errorCode(error);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EOPNOTSUPP') throw error;
    // File systems without hard links: O_EXCL still makes creation race-safe; on failure the
    // partial file we created is removed.
    const fh = await open(target, 'wx', mode);
    try {
      await writeAll(fh, data);
      await fh.sync();
      await fh.close();
    } catch (inner) {
      await fh.close().catch(() => {});
      await unlink(target).catch(() => {});
      throw inner;
    }
  }
}
