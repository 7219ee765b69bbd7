// The seccomp program travels to bwrap as an open file descriptor (`--seccomp FD`). bwrap read()s it
// from the current offset, so every command needs a fresh descriptor. The program is written once per
// process to a private directory (0700, under the host's temp dir: inside the sandbox /tmp is the
// run's own temp dir, so no command sees it) and opened afresh for each command. Before a descriptor
// is handed out, its bytes are compared with the program (pread, so the offset stays at 0): a file
// that was changed or removed is rewritten, never passed on.
import { closeSync, mkdtempSync, openSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFilter, encodeFilter, hostSeccompArch } from './seccomp.ts';

let program: Uint8Array | null = null;
let dir: string | null = null;
let counter = 0;

function filterBytes(): Uint8Array {
  if (program) return program;
  const arch = hostSeccompArch();
  if (!arch) throw new Error(`no seccomp filter for ${process.arch}`);
  program = encodeFilter(buildFilter(arch));
  return program;
}

function filterPath(): string {
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'conch-seccomp-'));
    const made = dir;
    process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  return join(dir, 'filter.bpf');
}

function write(path: string, bytes: Uint8Array): void {
  const staging = `${path}.${process.pid}.${++counter}`;
  writeFileSync(staging, bytes, { flag: 'wx', mode: 0o600 });
  renameSync(staging, path);
}

function openVerified(path: string, bytes: Uint8Array): number | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  const seen = Buffer.alloc(bytes.length + 1);
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
      dir = null;
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
