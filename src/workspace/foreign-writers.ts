// Whether someone other than this user could change what is in a folder, or put another folder in
// its place. `conch trust` lets a folder's plugins, MCP servers, model and skills run: a folder that
// another user can write (a world-writable one such as /tmp/x, one they own, or one below a folder
// they can rename entries in) would let them plant exactly that, and conch would obey it.
import { statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';

const STICKY = 0o1000;
const OTHERS_WRITE = 0o002;
const GROUP_WRITE = 0o020;

/**
 * Why another user could change `dir` (canonical) or what it holds, or null when only this user
 * (and root) can. The folder itself must be owned by this user or root and not writable by others;
 * each folder above it must be owned so too and writable by others only with the sticky bit (as
 * /tmp is: nobody can rename or remove an entry there that is not theirs). Writable by its group
 * counts as by others unless the group is this user's own (a private group, as umask 002 setups
 * give every folder): a shared group's members are other users. Without user ids (Windows) there
 * is nothing to compare: null. `holdsOnlyYours`: what matters in `dir` is one entry of this user's
 * (a file, checked apart), so `dir` is held as the folders above it are (sticky /tmp will do).
 */
export function foreignWriter(dir: string, holdsOnlyYours = false): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const gid = process.getgid?.();
  for (let path = dir; ; path = dirname(path)) {
    const info = examine(path, uid);
    if (typeof info === 'string') return info;
    const mode = modeText(info);
    const othersWrite = (info.mode & OTHERS_WRITE) !== 0;
    if (othersWrite && path === dir && !holdsOnlyYours) return `${path} is writable by every user (mode ${mode})`;
    if (othersWrite && (info.mode & STICKY) === 0) return `${path}, a folder above it, is writable by every user without the sticky bit (mode ${mode})`;
    const groupWrite = (info.mode & GROUP_WRITE) !== 0 && info.gid !== gid && info.gid !== 0;
    if (groupWrite && path === dir && !holdsOnlyYours) return `${path} is writable by the members of group ${info.gid} (mode ${mode})`;
    if (groupWrite && (info.mode & STICKY) === 0) return `${path}, a folder above it, is writable by the members of group ${info.gid} without the sticky bit (mode ${mode})`;
    if (dirname(path) === path) return null;
  }
}

/**
 * Why another user could change the file at `path` (canonical) or put another in its place, or null:
 * it must be this user's (or root's) and writable by no one else, in a folder foreignWriter accepts.
 */
export function foreignFile(path: string): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const info = examine(path, uid);
  if (typeof info === 'string') return info;
  const mode = modeText(info);
  if ((info.mode & OTHERS_WRITE) !== 0) return `${path} is writable by every user (mode ${mode})`;
  if ((info.mode & GROUP_WRITE) !== 0 && info.gid !== process.getgid?.() && info.gid !== 0) return `${path} is writable by the members of group ${info.gid} (mode ${mode})`;
  return foreignWriter(dirname(path), true);
}

/** The path's stat when this user or root owns it; otherwise why not, as a sentence. */
function examine(path: string, uid: number): Stats | string {
  let info;
  try {
    info = statSync(path);
  } catch (error) {
    return `${path} cannot be examined (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}), so who may write it is unknown`;
  }
  return info.uid !== uid && info.uid !== 0 ? `${path} is owned by another user (uid ${info.uid})` : info;
}

const modeText = (info: Stats) => (info.mode & 0o7777).toString(8).padStart(4, '0');
