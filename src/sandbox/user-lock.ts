// One lock per user, shared by every conch process of that user: flock(2) on a file in the per-user
// state directory (user-dir.ts, mode 0700, outside every workspace and invisible to sandboxed
// commands). The placeholder bookkeeping runs under it, so that "is another process still using this
// placeholder?" and "remove it" cannot interleave with another process deciding to use it.
//
// flock because the kernel drops it when its holder dies, however it dies (SIGKILL included): there
// is no stale lock to detect or break. Neither Bun nor Node exposes flock, so it is called through
// bun:ffi; the descriptor is opened close-on-exec, so no command conch starts ever holds it.
//
// The work done under the lock is a handful of synchronous syscalls, so waiting is bounded: a holder
// that does not let go within LOCK_WAIT_MS (a conch stopped with Ctrl-Z inside those microseconds)
// makes withUserLock report failure (`busy`) instead of hanging the command, naming the holder as
// /proc/locks tells it (read only then: the usual lock costs nothing more, and the file stays empty).
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadLibc } from '../process/libc.ts';
import { userStateDir } from './user-dir.ts';

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;
const LOCK_WAIT_MS = 5000;

const pause = new Int32Array(new SharedArrayBuffer(4));

/** `busy`: another process held the lock past LOCK_WAIT_MS (else there is no lock to take here at all). */
export type LockResult<T> = { locked: true; value: T } | { locked: false; busy: boolean; reason: string };

/**
 * Run `work` holding the user lock. Not locked (no flock here, no shared state directory, or the
 * lock stayed taken): `work` is not run and the reason is returned, so the caller decides whether
 * going on without it is safe.
 */
export function withUserLock<T>(work: () => T): LockResult<T> {
  const libc = loadLibc();
  if (!libc) return { locked: false, busy: false, reason: 'flock(2) is not available to this process' };
  const dir = userStateDir();
  if (!dir.shared) return { locked: false, busy: false, reason: `the per-user state directory is not shared (${dir.path})` };
  const path = join(dir.path, 'placeholders.lock');
  let fd: number;
  try {
    fd = openSync(path, 'a', 0o600);
  } catch (error) {
    return { locked: false, busy: false, reason: `cannot open ${path}: ${(error as Error).message}` };
  }
  try {
    const until = Date.now() + LOCK_WAIT_MS;
    while (libc.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
      if (Date.now() >= until) return { locked: false, busy: true, reason: busyReason(path, holderOf(fd)) };
      Atomics.wait(pause, 0, 0, 1);
    }
    try {
      return { locked: true, value: work() };
    } finally {
      libc.flock(fd, LOCK_UN);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The pid holding the flock on `fd`'s file, from /proc/locks (`1: FLOCK ADVISORY WRITE <pid>
 * <major>:<minor>:<inode> 0 EOF`), or null when it is not known there (not Linux, another pid namespace's).
 */
function holderOf(fd: number): number | null {
  const ino = `:${fstatSync(fd).ino} `;
  for (const line of readText('/proc/locks').split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] !== 'FLOCK' || fields[3] !== 'WRITE' || !`${fields[5]} `.endsWith(ino)) continue;
    const pid = Number(fields[4]);
    if (pid > 0 && pid !== process.pid) return pid;
  }
  return null;
}

/** Which lock, who holds it (as far as is known), and what to do. */
function busyReason(path: string, pid: number | null): string {
  // Field 3 of /proc/PID/stat, after the command name's closing parenthesis: T (or t) is stopped.
  const state = pid ? readText(`/proc/${pid}/stat`).split(') ').at(-1)?.[0] : undefined;
  const who = !pid
    ? 'another conch process'
    : state === 'T' || state === 't'
      ? `process ${pid} (stopped: \`fg\` in its terminal or \`kill -CONT ${pid}\` lets it finish)`
      : `process ${pid}`;
  return `the per-user lock ${path} has been held by ${who} for more than ${LOCK_WAIT_MS / 1000} s; nothing was changed, so it is safe to run the command again once that process lets go (or ends)`;
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return '';
  }
}
