// conch's own stdout and stderr (the CLI's output, plugins' redirected output). Every write has
// reached the file descriptor when it returns, so any exit path (process.exit included) loses
// nothing, however slowly the reader reads.
//
// Why not process.stdout: for a pipe, Bun's stream writes asynchronously (a 1 MB write returns with
// 64 KiB in the pipe and the rest queued in the process), and `process.exit` drops the queue. Merely
// touching `process.stdout` also sets O_NONBLOCK on the pipe, which outlives conch and makes the next
// writer to the same pipe fail with EAGAIN. Node makes pipes and files synchronous for the same
// reason; this does the same without ever creating Bun's stream for a pipe.
import { readFileSync, writeSync } from 'node:fs';
import type { isatty as ttyIsatty } from 'node:tty';

export interface Output {
  write(text: string | Uint8Array): boolean;
  readonly isTTY: boolean;
  /** Terminal width, when this is a terminal. */
  readonly columns?: number;
  /** Terminal height, when this is a terminal. */
  readonly rows?: number;
  /** Why something written here never reached a reader (closed, EPIPE…); null while all of it did. */
  lost(): string | null;
}

function fdOutput(fd: 1 | 2): Output {
  const tty = isatty(fd);
  let lost: string | null | undefined;
  return {
    isTTY: tty,
    get columns() {
      // A terminal is unaffected by O_NONBLOCK games, and only Bun's stream knows its width.
      if (!tty) return undefined;
      return (fd === 1 ? process.stdout : process.stderr).columns || undefined;
    },
    get rows() {
      if (!tty) return undefined;
      return (fd === 1 ? process.stdout : process.stderr).rows || undefined;
    },
    write(text) {
      lost ??= !tty && closedAtStart(fd) ? 'it was closed when conch started' : null;
      if (lost === null) lost = writeAll(fd, typeof text === 'string' ? Buffer.from(text) : text);
      return true;
    },
    lost: () => lost ?? null,
  };
}

/**
 * The fd was closed when conch was started (`conch … >&-`): Bun then opens /dev/null in its place,
 * close-on-exec, which an fd inherited across exec can never be. Linux only (/proc); elsewhere such
 * output goes to /dev/null unnoticed.
 */
function closedAtStart(fd: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
    return flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) !== 0;
  } catch {
    return false;
  }
}
const O_CLOEXEC = 0o2000000;

/**
 * Write every byte, blocking until the reader takes them. The fd may be non-blocking even so (an
 * earlier Bun process in the same pipeline left it that way): then wait and retry. When the reader
 * is gone (EPIPE) or the fd is unusable, says why: output is dropped from then on, as `head` expects.
 */
/** A reader that left on purpose (`conch … | head -1`): conch exits 1 but, like git or grep, says nothing. */
export const READER_GONE = 'its reader is gone (EPIPE)';

function writeAll(fd: number, data: Uint8Array): string | null {
  let offset = 0;
  let pause = 1;
  while (offset < data.length) {
    try {
      offset += writeSync(fd, data, offset);
      pause = 1;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
        Bun.sleepSync(pause);
        pause = Math.min(pause * 2, 20);
      } else if (code === 'EPIPE') return READER_GONE;
      else if (code !== 'EINTR') return (error as Error).message;
    }
  }
  return null;
}

/**
 * isatty(3) without loading node:tty: its streams (node:stream and more) cost ≈ 6 ms of CPU on a
 * start that never uses them. Bun keeps Node's tty binding; node:tty should it go.
 */
const binding = (() => {
  try {
    return (process as unknown as { binding(name: string): { isTTY?: (fd: number) => boolean } }).binding('tty_wrap');
  } catch {
    return undefined;
  }
})();
const isatty: typeof ttyIsatty = binding?.isTTY ? (fd) => binding.isTTY!(fd) : (fd) => (require('node:tty') as typeof import('node:tty')).isatty(fd);

export const stdout = fdOutput(1);
export const stderr = fdOutput(2);

let lostSaid = false;
/**
 * Whether stdout lost output (closed, its reader gone): then it is said once on stderr, unless the
 * reader left on purpose (`conch … | head -1`), and the caller makes an exit code of 0 a failure.
 */
export function stdoutLost(): boolean {
  const why = stdout.lost();
  if (why === null) return false;
  if (why !== READER_GONE && !lostSaid) stderr.write(`conch: the output could not be written to stdout: ${why}\n`);
  lostSaid = true;
  return true;
}

/** stdin is a terminal, asked without creating Bun's stdin stream. */
export const stdinIsTTY = (): boolean => isatty(0);
