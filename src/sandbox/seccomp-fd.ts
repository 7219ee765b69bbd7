// The seccomp program travels to bwrap as an open file descriptor (`--seccomp FD`). bwrap read()s it
// from the current offset, so every command needs a fresh descriptor. The program lives in a file
// named after its hash, in conch's per-user state directory (user-dir.ts), written once and opened
// afresh for each command. Before a descriptor is handed out its bytes are compared with the program
// (pread, so the offset stays at 0): a file that was changed or removed is rewritten, never passed on.
// The file is kept on purpose (a 400-byte cache shared by conch processes of the same user): exit
// hooks do not run in every host (bun test), and one file per user is better than one per process.
import { closeSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildFilter, encodeFilter, hostSeccompArch } from './seccomp.ts';
import { forgetUserStateDir, userStateDir } from './user-dir.ts';

let program: Uint8Array | null = null;
let path: string | null = null;
let counter = 0;

function filterBytes(): Uint8Array {
  if (program) return program;
  const arch = hostSeccompArch();
  if (!arch) throw new Error(`no seccomp filter for ${process.arch}`);
  program = encodeFilter(buildFilter(arch));
  return program;
}

/** Where the program file lives (exported for tests). */
export function filterPath(): string {
  if (path) return path;
  // Bun's own hasher: importing node:crypto for this one digest cost every sandboxed start ≈ 18 ms.
  const digest = new Bun.CryptoHasher('sha256').update(filterBytes()).digest('hex').slice(0, 16);
  return (path = join(userStateDir().path, `seccomp-${process.arch}-${digest}.bpf`));
}

function write(target: string, bytes: Uint8Array): void {
  const staging = `${target}.${process.pid}.${++counter}`;
  writeFileSync(staging, bytes, { flag: 'wx', mode: 0o600 });
  renameSync(staging, target);
}

// One program per process (filterBytes), compared synchronously: one buffer serves every command.
let seenBuffer: Buffer | undefined;

function openVerified(target: string, bytes: Uint8Array): number | null {
  let fd: number;
  try {
    fd = openSync(target, 'r');
  } catch {
    return null;
  }
  const seen = (seenBuffer ??= Buffer.alloc(bytes.length + 1));
  const length = readSync(fd, seen, 0, seen.length, 0);
  if (length === bytes.length && seen.subarray(0, length).equals(bytes)) return fd;
  closeSync(fd);
  return null;
}

export interface SeccompFd {
  fd: number;
  close(): void;
}

export function openSeccompFd(): SeccompFd {
  const bytes = filterBytes();
  let fd = openVerified(filterPath(), bytes);
  if (fd === null) {
    try {
      write(filterPath(), bytes);
    } catch {
      // The directory itself is gone (a temp cleaner during a long run): start a new one.
      forgetUserStateDir();
      path = null;
      write(filterPath(), bytes);
    }
    fd = openVerified(filterPath(), bytes);
    if (fd === null) throw new Error(`cannot read back the seccomp program at ${filterPath()}`);
  }
  const opened = fd;
  let open = true;
  return {
    fd: opened,
    close() {
      if (!open) return;
      open = false;
      closeSync(opened);
    },
  };
}
