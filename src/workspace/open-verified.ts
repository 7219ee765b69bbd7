// Opening the file a policy check approved, and no other. The check decides on a canonical path;
// opening that path again afterwards would follow whatever stands there by then, so a directory
// on the way swapped for a symbolic link (by a background job, another session) would lead the
// read to a file the check never saw: a secret, or one outside the vault. So the file is opened
// first, without following a final link, and the descriptor is then asked where it really is
// (/proc/self/fd/N); only when that is the checked path is it handed back, and every byte is read
// from that descriptor, never by path again.
//
// Where /proc cannot name descriptors (macOS), only the final component is protected (O_NOFOLLOW):
// the same documented limitation as pinned-dir.ts.
import { constants, readlinkSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { canPin } from './pinned-dir.ts';

/** The file at the checked path was replaced between the check and the open; nothing was read. */
export class PathChanged extends Error {
  readonly code = 'ECHANGED';
  constructor(readonly path: string) {
    super(`${path} changed between its check and its opening (a directory or the file on its path was replaced)`);
  }
}

/** Non-blocking: a path swapped for a FIFO must not hang the run; no controlling terminal either. */
const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW;

/**
 * Open the file at `canonical` (a symlink-free absolute path, as the workspace policy and
 * canonicalize() return it) for reading, or fail with PathChanged when what was opened is not the
 * file at that path. Other failures are the file system's (ENOENT, EACCES, …).
 */
export async function openVerified(canonical: string): Promise<FileHandle> {
  let fh: FileHandle;
  try {
    fh = await open(canonical, FLAGS);
  } catch (error) {
    // The path was symlink-free when checked: a final link now means it was swapped in since.
    if ((error as { code?: string }).code === 'ELOOP') throw new PathChanged(canonical);
    throw error;
  }
  if (!canPin()) return fh;
  let actual: string | null = null;
  try {
    actual = readlinkSync(`/proc/self/fd/${fh.fd}`);
  } catch {
    // unreadable: treated as not the checked file
  }
  if (actual === canonical) return fh;
  await fh.close();
  throw new PathChanged(canonical);
}
