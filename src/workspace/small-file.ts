// Reading a small file that someone else may control (a repository's AGENTS.md or config): it must be
// a regular file, opened without blocking (a FIFO would hang conch before any deadline applies), and
// only its first bytes are read (a link to /dev/zero would otherwise fill memory).
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { openVerified } from './open-verified.ts';

export interface SmallFile {
  bytes: Buffer;
  /** The file had more than maxBytes. */
  truncated: boolean;
}

/** null when the file does not exist; throws a NodeJS.ErrnoException-like error otherwise. */
export async function readSmallFile(path: string, maxBytes: number): Promise<SmallFile | null> {
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
  return readOpened(fh, path, maxBytes);
}

/**
 * readSmallFile for the canonical path a policy check approved: the file at that path and no other
 * (open-verified.ts), so that nothing swapped in after the check (a link to a denied file, a FIFO)
 * is read. A link where the file was fails with PathChanged.
 */
export async function readCheckedSmallFile(canonical: string, maxBytes: number): Promise<SmallFile | null> {
  let fh;
  try {
    fh = await openVerified(canonical);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
  return readOpened(fh, canonical, maxBytes);
}

/** The first maxBytes of what `fh` holds, when that is a regular file (fstat, not the path); closes it. */
async function readOpened(fh: FileHandle, path: string, maxBytes: number): Promise<SmallFile> {
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw Object.assign(new Error(`${path} is a directory`), { code: 'EISDIR' });
    if (!st.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: 'ENOTREG' });
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await fh.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return { bytes: buffer.subarray(0, Math.min(length, maxBytes)), truncated: length > maxBytes };
  } finally {
    await fh.close();
  }
}
