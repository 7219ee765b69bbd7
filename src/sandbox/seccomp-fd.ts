// The seccomp program travels to bwrap as an open file descriptor (`--seccomp FD`). bwrap read()s it
// from the current offset, so every command needs a fresh descriptor. Each is a new file in a private
// directory (0700, under the host's temp dir, never inside anything a sandboxed command can write),
// opened for reading and unlinked at once: nothing is left on disk, nothing can be swapped in.
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
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

function privateDir(): string {
  if (dir) return dir;
  dir = mkdtempSync(join(tmpdir(), 'conch-seccomp-'));
  const made = dir;
  process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  return made;
}

export interface SeccompFd {
  fd: number;
  close(): void;
}

export function openSeccompFd(): SeccompFd {
  const bytes = filterBytes();
  let path = '';
  for (let attempt = 0; ; attempt++) {
    path = join(privateDir(), `filter-${process.pid}-${++counter}`);
    try {
      writeFileSync(path, bytes, { flag: 'wx', mode: 0o600 });
      break;
    } catch (error) {
      // The temp cleaner may have removed the directory during a long run: make a new one.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && attempt === 0) {
        dir = null;
        continue;
      }
      throw error;
    }
  }
  const fd = openSync(path, 'r');
  unlinkSync(path);
  let open = true;
  return {
    fd,
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}
