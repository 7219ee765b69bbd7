// Reading a note's bytes once its path passed the vault's confinement and conch's read policy.
import { openVerified } from 'conch';

/**
 * The bytes of the file at `abs` (canonical), and the key of the version read. Through a verified
 * descriptor: a folder on the path swapped for a link since the check (to a denied subtree, or out
 * of the vault) fails with PathChanged instead of being followed.
 */
export async function readNote(abs: string): Promise<{ bytes: Buffer; key: string }> {
  const fh = await openVerified(abs);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw Object.assign(new Error(`${abs} is not a regular file`), { code: 'EINVAL' });
    return { bytes: await fh.readFile(), key: noteKey(st) };
  } finally {
    await fh.close();
  }
}

/** A note's version without reading it: the index parses a note again when its key changed. */
export function noteKey(st: { ino: number; size: number; mtimeMs: number }): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}
