// Atomic file replacement: the new content goes to a private temporary file in the target's
// directory, is flushed, given the original's permissions, and only then renamed over the target.
// Until that rename the original is untouched; on any failure the temporary file is removed.
import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { link, open, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** Permission bits of the result. Default: the existing file's, else 0o666 minus the umask. */
  mode?: number;
  /**
   * Create only: fail with an EEXIST error if the target exists, decided atomically by the file
   * system (hard link), never by a check followed by a write.
   */
  createOnly?: boolean;
  /** Runs after the temporary file is complete and flushed, just before it replaces the target. Tests inject failures here; tools re-check freshness here. */
  beforeRename?: (tempPath: string) => void | Promise<void>;
}

/** Marker in temporary names, so a crash leftover is recognisable. */
export const TEMP_MARKER = '.conch-tmp-';

function errorCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

export function tempPathFor(target: string): string {
  // Stay well under NAME_MAX (255) whatever the target's name length.
  const name = basename(target).slice(0, 180);
  return join(dirname(target), `.${name}${TEMP_MARKER}${randomBytes(6).toString('hex')}`);
}

function defaultMode(): number {
  return 0o666 & ~process.umask();
}

export async function writeFileAtomic(target: string, data: Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const existing = options.createOnly ? null : await stat(target).catch((e) => (errorCode(e) === 'ENOENT' ? null : Promise.reject(e)));
  const mode = options.mode ?? (existing ? existing.mode & 0o7777 : defaultMode());
  const temp = tempPathFor(target);
  // 'wx' + 0o600: a unique name nobody else can have opened, readable by us alone until complete.
  const fh = await open(temp, 'wx', 0o600);
  let closed = false;
  try {
    await writeAll(fh, data);
    if (existing) await keepOwner(fh, existing);
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
    throw error;
  }
  if (options.createOnly) await unlink(temp).catch(() => {});
  await syncDirectory(dirname(target));
}

async function writeAll(fh: Awaited<ReturnType<typeof open>>, data: Uint8Array): Promise<void> {
  for (let offset = 0; offset < data.length; ) {
    const { bytesWritten } = await fh.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/** When run as root on someone else's file, the replacement must stay theirs. */
async function keepOwner(fh: Awaited<ReturnType<typeof open>>, original: Stats): Promise<void> {
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

/** Make the rename itself durable. Not every platform can fsync a directory; that is not an error. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // best effort
  }
}
