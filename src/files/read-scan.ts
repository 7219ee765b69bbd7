// One streaming pass over a text file: hash every byte, count lines, remember where lines start,
// and keep only the bytes of the requested page. Memory stays at one chunk plus one page whatever
// the file's size; a later page of an unchanged file seeks to a remembered line start instead.
import type { FileHandle } from 'node:fs/promises';
import { createHasher, HASH_CHUNK_BYTES, type Checkpoint } from '../workspace/revision.ts';
import { utf8SafeLength } from './filetype.ts';

export interface PageRequest {
  /** 1-based first line. */
  offset: number;
  /** Most lines in the page. */
  limit: number;
  /** Most bytes of line content in the page (a longer first line is cut). */
  maxBytes: number;
  /** Bytes of the file considered (workspace/revision.ts readEnd): what lies beyond is not read. */
  end: number;
}

export interface Page {
  /** Raw line bytes, without the '\n'. */
  lines: Uint8Array[];
  first: number;
  /** Why the page ended before the file did: the line or byte budget, or null at end of file. */
  stoppedBy: 'lines' | 'bytes' | null;
  /** Set when the first line was longer than the byte budget and was cut. */
  cutLine: number | null;
}

export interface FullScan {
  page: Page;
  revision: string;
  totalLines: number;
  checkpoints: Checkpoint[];
}

const NEWLINE = 0x0a;

class PageCollector {
  readonly lines: Uint8Array[] = [];
  private pieces: Uint8Array[] = [];
  private pieceBytes = 0;
  private lineBytes = 0;
  private usedBytes = 0;
  done = false;
  stoppedBy: Page['stoppedBy'] = null;
  cutLine: number | null = null;

  constructor(private readonly request: PageRequest) {}

  wants(line: number): boolean {
    return !this.done && line >= this.request.offset;
  }

  /** A piece of `line` (no newline in it). Copies only what the page can use. */
  add(line: number, piece: Uint8Array): void {
    this.lineBytes += piece.length;
    const first = this.lines.length === 0;
    if (!first && this.usedBytes + this.lineBytes > this.request.maxBytes) {
      // Whole lines only: this one does not fit, so the page ends before it.
      this.finish('bytes');
      return;
    }
    // A first line is kept up to the budget plus a few bytes, enough to cut at a character boundary.
    const room = (first ? this.request.maxBytes + 4 : this.request.maxBytes) - this.pieceBytes;
    if (room > 0) {
      const kept = piece.subarray(0, room);
      this.pieces.push(Uint8Array.from(kept));
      this.pieceBytes += kept.length;
    }
    if (first && this.lineBytes > this.request.maxBytes) {
      const whole = Buffer.concat(this.pieces);
      this.lines.push(whole.subarray(0, utf8SafeLength(whole, this.request.maxBytes)));
      this.cutLine = line;
      this.finish('bytes');
    }
  }

  endLine(): void {
    if (this.done) return;
    this.lines.push(this.pieces.length === 1 ? this.pieces[0]! : Buffer.concat(this.pieces));
    this.usedBytes += this.lineBytes + 1;
    this.pieces = [];
    this.pieceBytes = 0;
    this.lineBytes = 0;
    if (this.lines.length >= this.request.limit) this.finish('lines');
  }

  private finish(reason: Page['stoppedBy']): void {
    this.done = true;
    this.stoppedBy = reason;
    this.pieces = [];
  }

  page(): Page {
    return { lines: this.lines, first: this.request.offset, stoppedBy: this.stoppedBy, cutLine: this.cutLine };
  }
}

interface ScanOptions {
  from: Checkpoint;
  /** Full pass: hash, count and index everything. Otherwise stop as soon as the page is complete. */
  full: boolean;
  signal?: AbortSignal;
}

async function scan(fh: FileHandle, request: PageRequest, options: ScanOptions) {
  const collector = new PageCollector(request);
  const hasher = options.full ? createHasher() : null;
  const checkpoints: Checkpoint[] = [];
  const buffer = Buffer.allocUnsafe(HASH_CHUNK_BYTES);
  let position = options.from.offset;
  let line = options.from.line;
  let atLineStart = true;
  for (;;) {
    options.signal?.throwIfAborted();
    if (position >= request.end) break;
    const { bytesRead } = await fh.read(buffer, 0, Math.min(buffer.length, request.end - position), position);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    hasher?.update(chunk);
    // One checkpoint per chunk (its first line start) bounds any later seek to about a chunk.
    let needCheckpoint = options.full;
    if (needCheckpoint && atLineStart) {
      checkpoints.push({ offset: position, line });
      needCheckpoint = false;
    }
    for (let p = 0; p < bytesRead; ) {
      const nl = chunk.indexOf(NEWLINE, p);
      const end = nl === -1 ? bytesRead : nl;
      if (end > p && collector.wants(line)) collector.add(line, chunk.subarray(p, end));
      if (nl === -1) {
        atLineStart = false;
        break;
      }
      if (collector.wants(line)) collector.endLine();
      line++;
      p = nl + 1;
      atLineStart = true;
      if (needCheckpoint && p < bytesRead) {
        checkpoints.push({ offset: position + p, line });
        needCheckpoint = false;
      }
      if (!options.full && collector.done) return { collector, line, atLineStart, hasher, checkpoints, position: position + p, eof: false };
    }
    position += bytesRead;
    if (!options.full && collector.done) return { collector, line, atLineStart, hasher, checkpoints, position, eof: false };
  }
  // A last line without a trailing newline is still a line.
  if (!atLineStart && collector.wants(line)) collector.endLine();
  return { collector, line, atLineStart, hasher, checkpoints, position, eof: true };
}

/** Hash, count and index the whole file while collecting one page. */
export async function scanFull(fh: FileHandle, request: PageRequest, signal?: AbortSignal): Promise<FullScan> {
  const r = await scan(fh, request, { from: { offset: 0, line: 1 }, full: true, signal });
  const totalLines = r.position === 0 ? 0 : r.atLineStart ? r.line - 1 : r.line;
  return { page: r.collector.page(), revision: r.hasher!.digest(), totalLines, checkpoints: r.checkpoints };
}

/** Collect one page of a file already indexed, reading from the nearest checkpoint at or before it. */
export async function scanPage(fh: FileHandle, request: PageRequest, checkpoints: Checkpoint[], signal?: AbortSignal): Promise<Page> {
  let from: Checkpoint = { offset: 0, line: 1 };
  let lo = 0;
  let hi = checkpoints.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const cp = checkpoints[mid]!;
    if (cp.line <= request.offset) {
      from = cp;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  const r = await scan(fh, request, { from, full: false, signal });
  return r.collector.page();
}
