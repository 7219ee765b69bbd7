// One pipe for a command's stdout and stderr, so their interleaving is exactly the order of the
// writes. Where libc is at hand (Linux) conch makes the pipe itself (close-on-exec, so no other
// child inherits it) and hands its write end to the child as both fd 1 and fd 2. Elsewhere, and for
// an argv[0] that is not an absolute path, the child starts as `sh -c 'exec "$@" 2>&1'`, which dups
// stdout onto fd 2 and execs: one more exec of the shell per command (≈0.6 ms), and a program that
// is not found is the shell's 127, as in the bash tool.
import { closeSync, readlinkSync } from 'node:fs';
import { loadLibc } from './libc.ts';
import { stdoutPipeOf } from './group.ts';

const MERGE_STDERR = ['/bin/sh', '-c', 'exec "$@" 2>&1', 'sh'];

export interface MergedOutput {
  /** What to spawn. */
  cmd: string[];
  /** The child's fd 1 and fd 2 for Bun.spawn's stdio. */
  stdout: 'pipe' | number;
  stderr: 'ignore' | number;
  /** Call once spawned (or failed to): conch's copy of the write end goes, so EOF can come. */
  spawned(): void;
  /** The output, given the spawned process's own stdout (used when conch made no pipe). */
  stream(stdout: ReadableStream<Uint8Array> | number | undefined): ReadableStream<Uint8Array>;
  /** The pipe's identity ('pipe:[N]'), to find processes that still hold it; null when unknown. */
  identity(pid: number): string | null;
  /** Once reading is over: conch's read end goes. Safe to call twice. */
  close(): void;
}

export function mergedOutput(argv: string[]): MergedOutput {
  const fds = argv[0]?.startsWith('/') ? (loadLibc()?.pipe() ?? null) : null;
  if (!fds) {
    return {
      cmd: [...MERGE_STDERR, ...argv],
      stdout: 'pipe',
      stderr: 'ignore',
      spawned() {},
      stream: (stdout) => stdout as ReadableStream<Uint8Array>,
      identity: stdoutPipeOf,
      close() {},
    };
  }
  const [readEnd, writeEnd] = fds;
  let writeOpen = true;
  let readOpen = true;
  return {
    cmd: argv,
    stdout: writeEnd,
    stderr: writeEnd,
    spawned() {
      if (!writeOpen) return;
      writeOpen = false;
      closeSync(writeEnd);
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
    close() {
      if (!readOpen) return;
      readOpen = false;
      closeSync(readEnd);
    },
  };
}
