// Temporary files a killed writer left. Each temporary name (atomic.ts) carries its writer's process
// tag (pid namespace, pid, start time: process/identity.ts), so whoever writes in that folder next
// can tell a dead writer's file from a live one's and remove it. Once per folder per process: a
// readdir per write would cost a large folder's listing every time, and a leftover is clutter, not
// harm. Only files of this user are touched. Never throws. Backups of an interrupted multi-file edit (atomic-set.ts) carry no tag this
// matches: they may be the only copy of a file's former content, so they stay for the user.
import { lstat, readdir, unlink } from 'node:fs/promises';
import { liveness } from '../process/identity.ts';
import type { PinnedDir } from './pinned-dir.ts';

/** Marker in temporary names, so a crash leftover is recognisable. */
export const TEMP_MARKER = '.conch-tmp-';
/** What follows the marker in a tagged temporary name: `<pidns>-<pid>-<start>-<12 hex>`. */
const TAGGED = /^(\d+)-(\d+)-(\d+)-[0-9a-f]{12}$/;

const swept = new Set<string>();

/** Remove the temporary files of dead writers in `dir` (the first time this process writes there). */
export async function sweepDeadTemps(dir: PinnedDir): Promise<void> {
  if (swept.has(dir.path)) return;
  swept.add(dir.path);
  let names: string[];
  try {
    names = await readdir(dir.entry('.'));
  } catch {
    return; // a folder we may write but not list: nothing to find
  }
  for (const name of names) {
    const at = name.lastIndexOf(TEMP_MARKER);
    const tag = at > 0 ? TAGGED.exec(name.slice(at + TEMP_MARKER.length)) : null;
    if (!tag || liveness({ ns: tag[1]!, pid: Number(tag[2]), start: tag[3]! }) !== 'dead') continue;
    // Only our own: another user's live writer can look dead where /proc hides their processes (hidepid).
    const info = await lstat(dir.entry(name)).catch(() => null);
    if (info?.isFile() && info.uid === process.getuid?.()) await unlink(dir.entry(name)).catch(() => {});
  }
}
