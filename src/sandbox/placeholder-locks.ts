// Placeholders in use by conch processes that share no records (placeholder-records.ts): another
// TMPDIR (so another state directory and lock), another user, another container on the same
// workspace. Such a process finds a placeholder and takes it for a real empty file; when its maker
// ended and removed it, the bind mount over it went too (unlinking a mount point in another mount
// namespace detaches that mount), and the command still running there could create the name: a
// .git with hooks, an .env.local.
//
// So whoever binds an existing empty file or directory that is not known to be a placeholder holds
// a shared flock(2) on it until its scope lets go, and a placeholder is removed only under an
// exclusive lock taken without waiting: while anyone holds the shared one it stays (its maker keeps
// it in its record and tries again later, see placeholders.ts). flock works across users, mount
// namespaces and pid namespaces alike, and the kernel drops it with its holder however that dies.
// A lock is on the inode, so the taker checks afterwards that the inode is still at the path (a
// removal may have come first); the remover checks the same before it unlinks.
import { closeSync, constants, fstatSync, lstatSync, openSync, type Stats } from 'node:fs';
import { loadLibc } from '../process/libc.ts';

const LOCK_SH = 1;
const LOCK_EX = 2;
const LOCK_NB = 4;
const EWOULDBLOCK = 11;
/** No final link followed, no blocking open, no controlling terminal. Bun opens close-on-exec. */
const FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
/** A remover holds its exclusive lock for a few syscalls; a shared one waits that long at most. */
const SHARED_WAIT_MS = 1000;

const open = new Set<number>();
const pause = new Int32Array(new SharedArrayBuffer(4));

function openAt(path: string): number | null {
  try {
    return openSync(path, FLAGS);
  } catch {
    return null;
  }
}

const same = (a: Stats, b: Stats) => a.dev === b.dev && a.ino === b.ino;

/**
 * A shared lock on `info`, the thing now at `path`: its descriptor; 'changed' when the path no
 * longer holds that inode (removed or replaced meanwhile: look again); null where there is no
 * flock (the bind goes ahead unguarded, as before).
 */
export function lockShared(path: string, info: Stats): number | 'changed' | null {
  const libc = loadLibc();
  if (!libc) return null;
  const fd = openAt(path);
  if (fd === null) return 'changed';
  const until = Date.now() + SHARED_WAIT_MS;
  while (libc.flock(fd, LOCK_SH | LOCK_NB) !== 0) {
    // Held by a remover: it lets go in microseconds. Any other failure: this file system has no
    // flock for it (a directory on NFS), and nobody can hold one there either.
    if (libc.errno() !== EWOULDBLOCK || Date.now() >= until) {
      closeSync(fd);
      return null;
    }
    Atomics.wait(pause, 0, 0, 1);
  }
  let now: Stats | undefined;
  try {
    now = lstatSync(path);
  } catch {
    // gone: changed
  }
  if (!now || !same(now, info) || !same(fstatSync(fd), info)) {
    closeSync(fd);
    return 'changed';
  }
  open.add(fd);
  return fd;
}

export function unlock(fd: number): void {
  if (!open.delete(fd)) return;
  try {
    closeSync(fd);
  } catch {
    // closed already
  }
}

/** For the exit: this process's own shared locks must not keep its own placeholders in place. */
export function unlockAll(): void {
  for (const fd of [...open]) unlock(fd);
}

/**
 * Run `remove` with what is at `path` (lstat) while no process holds a shared lock on it:
 * 'in-use' when one does (nothing removed). Where there is no flock, `remove` runs as before.
 */
export function whileUnused(path: string, remove: (info: Stats) => void): 'done' | 'in-use' {
  const libc = loadLibc();
  if (!libc) {
    remove(lstatSync(path));
    return 'done';
  }
  const fd = openAt(path);
  if (fd === null) return 'done'; // gone, or no longer what conch made (a link)
  try {
    if (libc.flock(fd, LOCK_EX | LOCK_NB) !== 0 && libc.errno() === EWOULDBLOCK) return 'in-use';
    const info = lstatSync(path);
    if (same(info, fstatSync(fd))) remove(info);
    return 'done';
  } finally {
    closeSync(fd);
  }
}
