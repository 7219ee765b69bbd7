// The libc calls conch needs that neither Bun nor Node exposes, through bun:ffi: flock(2)
// (sandbox/user-lock.ts), prctl(2) and waitpid(2) (orphans.ts), pipe2(2) (merged-output.ts), fcntl(2) (plugins/output.ts, merged-output.ts),
// poll(2) (acp/server.ts: is the editor still reading?), ioctl(2)'s NS_GET_USERNS and pidfd_send_signal(2) (sandbox/held.ts), and kill(2) and read(2) that report failure as a value: Node's throw, and an exception made on
// every command (ESRCH for a group that is gone, EAGAIN for an empty pipe) costs more than the call.
// Loaded on first use, Linux only; null where the C library cannot be opened (the callers then do
// without, and say so where it matters).
import { dlopen, FFIType, ptr, read } from 'bun:ffi';

export interface Libc {
  flock(fd: number, operation: number): number;
  /** errno right after a call that failed (flock's EWOULDBLOCK: someone holds the lock). */
  errno(): number;
  prctl(option: number, arg2: number): number;
  /** waitpid(pid, NULL, WNOHANG): pid when reaped, 0 when still running, -1 on error. */
  reap(pid: number): number;
  /** pipe2(O_CLOEXEC, and O_NONBLOCK when asked): [read end, write end], or null on error. */
  pipe(options?: { nonBlocking?: boolean }): [number, number] | null;
  /** fcntl(fd, F_GETFL), or -1 on error. */
  statusFlags(fd: number): number;
  /** fcntl(fd, F_SETFL, flags). */
  setStatusFlags(fd: number, flags: number): number;
  /** fcntl(fd, F_SETPIPE_SZ, bytes): the pipe's new capacity, or -1 on error. */
  setPipeSize(fd: number, bytes: number): number;
  /** kill(pid, signal): 0, or the errno it failed with (ESRCH, EPERM). */
  kill(pid: number, signal: number): number;
  /** read(fd, buffer): bytes read, 0 at end of file, -1 on error (EAGAIN: nothing there yet). */
  read(fd: number, buffer: Uint8Array): number;
  /** poll(2) one fd for `events` without waiting: its revents (POLLERR on a pipe nobody reads), -1 on error. */
  pollNow(fd: number, events: number): number;
  /** ioctl(fd, NS_GET_USERNS): a new fd of the user namespace that owns namespace fd `fd`, or -1. */
  namespaceOwner(fd: number): number;
  /** pidfd_send_signal(fd, signal): fd a pidfd or a /proc/PID directory; 0, or the errno. */
  signalProcessFd(fd: number, signal: number): number;
}

export const POLLOUT = 0x4;
export const POLLERR = 0x8;
export const POLLHUP = 0x10;

export const ESRCH = 3;
export const EPERM = 1;

const F_GETFL = 3;
const F_SETFL = 4;
const F_SETPIPE_SZ = 1031;

const WNOHANG = 1;
// _IO(0xb7, 0x1), linux/nsfs.h
const NS_GET_USERNS = 0xb701;
// The same number on every architecture (syscalls added after 4.20 share one table).
const SYS_PIDFD_SEND_SIGNAL = 424;
const O_CLOEXEC = 0o2000000;
const O_NONBLOCK = 0o4000;

let libc: Libc | null | undefined;

export function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== 'linux') return libc;
  for (const name of ['libc.so.6', 'libc.musl-x86_64.so.1', 'libc.musl-aarch64.so.1', 'libc.so']) {
    try {
      const lib = dlopen(name, {
        flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
        prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
        waitpid: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
        pipe2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
        fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
        kill: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
        read: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64_fast },
        poll: { args: [FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i32 },
        ioctl: { args: [FFIType.i32, FFIType.u64], returns: FFIType.i32 },
        syscall: { args: [FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64, FFIType.i64], returns: FFIType.i64 },
        __errno_location: { args: [], returns: FFIType.ptr },
      });
      const { flock, prctl, waitpid, pipe2, fcntl, kill, read: readFd, poll, ioctl, syscall, __errno_location } = lib.symbols;
      const errno = () => read.i32(__errno_location()!, 0);
      return (libc = {
        flock: (fd, operation) => flock(fd, operation) as number,
        errno,
        prctl: (option, arg2) => prctl(option, arg2, 0, 0, 0) as number,
        reap: (pid) => waitpid(pid, null, WNOHANG) as number,
        pipe: (options) => {
          const fds = new Int32Array(2);
          return pipe2(ptr(fds), O_CLOEXEC | (options?.nonBlocking ? O_NONBLOCK : 0)) === 0 ? [fds[0]!, fds[1]!] : null;
        },
        statusFlags: (fd) => fcntl(fd, F_GETFL, 0) as number,
        setStatusFlags: (fd, flags) => fcntl(fd, F_SETFL, flags) as number,
        setPipeSize: (fd, bytes) => fcntl(fd, F_SETPIPE_SZ, bytes) as number,
        kill: (pid, signal) => ((kill(pid, signal) as number) === 0 ? 0 : errno()),
        read: (fd, buffer) => (buffer.length === 0 ? 0 : Number(readFd(fd, ptr(buffer), buffer.length))),
        pollNow: (fd, events) => {
          // struct pollfd { int fd; short events; short revents; }
          const entry = new Int32Array(2);
          entry[0] = fd;
          new Int16Array(entry.buffer)[2] = events;
          return (poll(ptr(entry), 1, 0) as number) < 0 ? -1 : new Int16Array(entry.buffer)[3]!;
        },
        namespaceOwner: (fd) => ioctl(fd, NS_GET_USERNS) as number,
        signalProcessFd: (fd, signal) => (Number(syscall(SYS_PIDFD_SEND_SIGNAL, fd, signal, 0, 0)) === 0 ? 0 : errno()),
      });
    } catch {
      // not this C library
    }
  }
  return libc;
}
