// One pipe for a command's stdout and stderr, so their interleaving is exactly the order of the
// writes. Where libc is at hand (Linux) conch makes the pipe itself (close-on-exec, so no other
// child inherits it) and hands its write end to the child as both fd 1 and fd 2. Elsewhere, and for
// an argv[0] that is not an absolute path, the child starts as `sh -c 'exec "$@" 2>&1'`, which dups
// stdout onto fd 2 and execs: one more exec of the shell per command (≈0.6 ms), and a program that
// is not found is the shell's 127, as in the bash tool.
//
// With `outputFd` (a sandboxed command that moves that fd onto its own 1 and 2 first thing, see
// sandbox/index.ts) the pipe is handed over as that fd instead, and fds 1 and 2 are only bwrap's:
// bwrap's first process in the sandbox keeps its stdio until its own exit, after bwrap's, so with
// the pipe there the end of the output would wait for the sandbox's teardown. Fd 2 is then a small
// pipe of its own for what comes before the command runs (bwrap's errors, a shell syntax error on
// the command's first line), read without waiting once the command is over.
import { closeSync, readlinkSync } from 'node:fs';
import { loadLibc } from './libc.ts';
import { stdoutPipeOf } from './group.ts';

const MERGE_STDERR = ['/bin/sh', '-c', 'exec "$@" 2>&1', 'sh'];
const EARLY_PIPE_BYTES = 256 * 1024;

export interface MergedOutput {
  /** What to spawn. */
  cmd: string[];
  /** The child's fd 1 and fd 2 for Bun.spawn's stdio. */
  stdout: 'pipe' | 'ignore' | number;
  stderr: 'ignore' | number;
  /** outputFd only: the write end, for the child's stdio at that index. */
  atOutputFd?: number;
  /** Call once spawned (or failed to): conch's copy of the write end goes, so EOF can come. */
  spawned(): void;
  /** The output, given the spawned process's own stdout (used when conch made no pipe). */
  stream(stdout: ReadableStream<Uint8Array> | number | undefined): ReadableStream<Uint8Array>;
  /** The pipe's identity ('pipe:[N]'), to find processes that still hold it; null when unknown. */
  identity(pid: number): string | null;
  /** outputFd only, once the command is over: what reached fd 2 (empty otherwise). */
  early(): Uint8Array;
  /** Once reading is over: conch's read ends go. Safe to call twice. */
  close(): void;
}

/** Whether mergedOutput can hand the output over as another fd (the caller then builds its command so). */
export function canUseOutputFd(): boolean {
  return loadLibc() !== null;
}

// early() reads synchronously and copies what it keeps: one buffer serves every command.
let earlyBuffer: Buffer | undefined;

export function mergedOutput(argv: string[], options: { outputFd?: number } = {}): MergedOutput {
  const libc = argv[0]?.startsWith('/') ? loadLibc() : null;
  const fds = libc?.pipe() ?? null;
  const errFds = fds && options.outputFd !== undefined ? libc!.pipe({ nonBlocking: true }) : null;
  // Read only once the command is over, so it must hold all that can come before the command runs:
  // a syntax error on the first line, which bash (where it is /bin/sh) quotes whole. 64 KiB cut that
  // message short and the shell, writing the rest, hung until the timeout. The command is one argv
  // string, at most 128 KiB (MAX_ARG_STRLEN).
  if (errFds) libc!.setPipeSize(errFds[1], EARLY_PIPE_BYTES);
  if (!fds || (options.outputFd !== undefined && !errFds)) {
    if (fds) for (const fd of fds) closeSync(fd);
    if (options.outputFd !== undefined) throw new Error('mergedOutput: outputFd needs pipe2 (check canUseOutputFd first)');
    return {
      cmd: [...MERGE_STDERR, ...argv],
      stdout: 'pipe',
      stderr: 'ignore',
      spawned() {},
      stream: (stdout) => stdout as ReadableStream<Uint8Array>,
      identity: stdoutPipeOf,
      early: () => new Uint8Array(0),
      close() {},
    };
  }
  const [readEnd, writeEnd] = fds;
  const [errRead, errWrite] = errFds ?? [-1, -1];
  let writeOpen = true;
  let readOpen = true;
  return {
    cmd: argv,
    stdout: errFds ? 'ignore' : writeEnd,
    stderr: errFds ? errWrite : writeEnd,
    ...(errFds ? { atOutputFd: writeEnd } : {}),
    spawned() {
      if (!writeOpen) return;
      writeOpen = false;
      closeSync(writeEnd);
      if (errFds) closeSync(errWrite);
    },
    // Bun reads a pipe it did not make without closing it: close() does.
    stream: () => Bun.file(readEnd).stream(),
    identity() {
      try {
        return readlinkSync(`/proc/self/fd/${readEnd}`);
      } catch {
        return null;
      }
    },
    early() {
      if (!errFds || !readOpen) return new Uint8Array(0);
      // Non-blocking: what the writers left is there; the sandbox's first process may still hold
      // the write end, so there is no EOF to wait for.
      const chunks: Buffer[] = [];
      const buffer = (earlyBuffer ??= Buffer.alloc(65536));
      // libc's read: an empty pipe (the usual case) is EAGAIN, which readSync would throw.
      for (let n; (n = libc!.read(errRead, buffer)) > 0; ) chunks.push(Buffer.from(buffer.subarray(0, n)));
      return chunks.length === 0 ? new Uint8Array(0) : Buffer.concat(chunks);
    },
    close() {
      if (!readOpen) return;
      readOpen = false;
      closeSync(readEnd);
      if (errFds) closeSync(errRead);
    },
  };
}
