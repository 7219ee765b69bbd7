// Bounded capture of a command's output: everything up to the budget stays in memory; past it only
// a head and a tail are kept and the full stream goes to a log file, so a flood costs O(budget) in
// memory. The log itself stops at its own bound (maxLogBytes): `yes` must not fill the disk.
import { closeSync, mkdirSync, openSync, realpathSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

// Errors and summaries tend to come last, so the tail gets the larger share.
const HEAD_SHARE = 0.4;
// Snap a cut to a line break when one is this close, so lines are not shown half.
const LINE_SNAP_BYTES = 256;

export interface CapturedOutput {
  output: string;
  truncated: boolean;
  totalBytes: number;
  logPath: string | null;
  /** Set when the log stopped growing at maxLogBytes: the bytes it holds (the first ones). */
  logCutAt?: number;
}

/**
 * Where each log folder led when conch made it. The folder may sit where another conch's commands
 * can write (TMPDIR inside a shared workspace): a link put in its place would have the log, the
 * command's output, written into any folder of the user's (a ~/.bashrc.d that the shell sources).
 */
const logDirs = new Map<string, string>();

/** Make the run's log folder now and keep where it leads; a log that opens anywhere else is not written. */
export function rememberLogDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (logDirs.size >= 64) logDirs.clear();
  logDirs.set(dir, realpathSync(dir));
}

/** Whether the file open on `fd` lies in `dir` (true where /proc cannot tell). */
function openedIn(fd: number, dir: string): boolean {
  let real: string;
  try {
    real = realpathSync(`/proc/self/fd/${fd}`);
  } catch {
    return true;
  }
  if (dirname(real) === dir) return true;
  try {
    unlinkSync(real); // empty: nothing was written to it
  } catch {
    // gone already
  }
  return false;
}

export class BoundedOutput {
  private chunks: Uint8Array[] = [];
  private buffered = 0;
  private total = 0;
  private head: Uint8Array | null = null;
  private tail: TailRing | null = null;
  private logFd: number | null = null;
  private logPath: string | null = null;
  /** For onOutput's chunks only (a sequence may span two of them); made when the first one comes. */
  private decoder: TextDecoder | null = null;
  private logError: string | null = null;
  private logged = 0;
  private logCut = false;

  /** maxLogBytes: the most the log keeps (0 = no bound). */
  constructor(
    private readonly maxShownBytes: number,
    private readonly logDir: string,
    private readonly onOutput?: (chunk: string) => void,
    private readonly maxLogBytes = 0,
  ) {}

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    if (this.onOutput) {
      try {
        this.onOutput(sanitize((this.decoder ??= new TextDecoder('utf-8', { fatal: false })).decode(chunk, { stream: true })));
      } catch {
        // A progress callback's bug must not stop the draining: the child would block on a full pipe.
      }
    }
    if (this.tail) {
      this.writeLog(chunk);
      this.tail.push(chunk);
      return;
    }
    // The stream may reuse its buffer; keep a private copy.
    this.chunks.push(chunk.slice());
    this.buffered += chunk.length;
    if (this.buffered > this.maxShownBytes) this.spill();
  }

  private spill(): void {
    const all = concat(this.chunks, this.buffered);
    this.chunks = [];
    const headLen = Math.floor(this.maxShownBytes * HEAD_SHARE);
    this.head = all.slice(0, headLen);
    this.tail = new TailRing(this.maxShownBytes - headLen);
    this.tail.push(all.subarray(headLen));
    try {
      mkdirSync(this.logDir, { recursive: true, mode: 0o700 });
      const name = `output-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.log`;
      this.logPath = join(this.logDir, name);
      this.logFd = openSync(this.logPath, 'wx', 0o600);
      const expected = logDirs.get(this.logDir);
      if (expected !== undefined && !openedIn(this.logFd, expected)) {
        closeSync(this.logFd);
        this.logFd = null;
        throw new Error('the folder no longer leads where conch made it (a link was put in its way), so nothing was written');
      }
    } catch (error) {
      this.logError = `could not create the output log in ${this.logDir}: ${(error as Error).message}`;
      this.logPath = null;
      return;
    }
    this.writeLog(all);
  }

  // Synchronous on purpose: the reader does not pull the next chunk until this one is on disk,
  // which is the backpressure that keeps a flood from piling up in memory.
  private writeLog(whole: Uint8Array): void {
    if (this.logFd === null) return;
    let bytes = whole;
    if (this.maxLogBytes > 0 && this.logged + bytes.length > this.maxLogBytes) {
      bytes = bytes.subarray(0, this.maxLogBytes - this.logged);
      this.logCut = true;
    }
    try {
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(this.logFd, bytes, offset, bytes.length - offset);
      this.logged += bytes.length;
      // Full: nothing more goes to disk, the head and tail for the result are kept as before.
      if (this.logCut) this.closeLog();
    } catch (error) {
      this.logError = `writing the output log ${this.logPath} failed: ${(error as Error).message}`;
      this.closeLog();
    }
  }

  private closeLog(): void {
    if (this.logFd === null) return;
    try {
      closeSync(this.logFd);
    } catch {
      // Nothing useful to do: the data already written stays.
    }
    this.logFd = null;
  }

  finish(): CapturedOutput {
    this.closeLog();
    if (!this.head || !this.tail) {
      const text = render(concat(this.chunks, this.buffered));
      return { output: text, truncated: false, totalBytes: this.total, logPath: null };
    }
    const head = cutHead(this.head);
    const tail = cutTail(this.tail.bytes());
    const omitted = this.total - head.length - tail.length;
    const cut = this.logCut && this.logPath && !this.logError;
    const where = !this.logPath
      ? (this.logError ?? 'no log')
      : cut
        ? `the first ${this.logged} of ${this.total} bytes in ${this.logPath} (the log was cut at ${this.logged} bytes: limit shell_log_bytes)`
        : `full output (${this.total} bytes) in ${this.logPath}`;
    const marker = `\n[... ${omitted} bytes omitted; ${where} ...]\n`;
    return {
      output: render(head) + marker + render(tail),
      truncated: true,
      totalBytes: this.total,
      logPath: this.logPath,
      ...(cut ? { logCutAt: this.logged } : {}),
    };
  }
}

/** Keeps the last `capacity` bytes written to it. */
class TailRing {
  private readonly buffer: Uint8Array;
  private start = 0;
  private length = 0;

  constructor(private readonly capacity: number) {
    this.buffer = new Uint8Array(capacity);
  }

  push(chunk: Uint8Array): void {
    if (this.capacity === 0) return;
    if (chunk.length >= this.capacity) {
      this.buffer.set(chunk.subarray(chunk.length - this.capacity));
      this.start = 0;
      this.length = this.capacity;
      return;
    }
    const end = (this.start + this.length) % this.capacity;
    const first = Math.min(chunk.length, this.capacity - end);
    this.buffer.set(chunk.subarray(0, first), end);
    this.buffer.set(chunk.subarray(first), 0);
    const overflow = this.length + chunk.length - this.capacity;
    if (overflow > 0) {
      this.start = (this.start + overflow) % this.capacity;
      this.length = this.capacity;
    } else {
      this.length += chunk.length;
    }
  }

  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    const first = Math.min(this.length, this.capacity - this.start);
    out.set(this.buffer.subarray(this.start, this.start + first));
    out.set(this.buffer.subarray(0, this.length - first), first);
    return out;
  }
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** The head, ending at a line break if one is near, and never inside a UTF-8 sequence. */
export function cutHead(bytes: Uint8Array): Uint8Array {
  const nl = bytes.lastIndexOf(0x0a);
  if (nl >= 0 && bytes.length - (nl + 1) <= LINE_SNAP_BYTES) return bytes.subarray(0, nl + 1);
  // Step back over a trailing sequence that is incomplete (its lead byte promises more bytes).
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? bytes.subarray(0, bytes.length - back) : bytes;
  }
  return bytes;
}

/** The tail, starting after a line break if one is near, and never inside a UTF-8 sequence. */
export function cutTail(bytes: Uint8Array): Uint8Array {
  const nl = bytes.indexOf(0x0a);
  if (nl >= 0 && nl < LINE_SNAP_BYTES) return bytes.subarray(nl + 1);
  let start = 0;
  while (start < Math.min(3, bytes.length) && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start);
}

// Without { stream: true } a decode keeps no state between calls, so one decoder serves them all.
const decoder = new TextDecoder('utf-8', { fatal: false });

export function render(bytes: Uint8Array): string {
  // Many commands print nothing (a quiet build, a passing check): no decoding for them.
  return bytes.length === 0 ? '' : sanitize(decoder.decode(bytes));
}

/**
 * Text safe to show: invalid UTF-8 already became U+FFFD in decoding; CRLF becomes LF; other
 * control characters (ANSI escapes, NUL, lone CR, C1) are shown escaped instead of acting on a terminal.
 */
export function sanitize(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
