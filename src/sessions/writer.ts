// Appending to a session file. Each record is one line handed to one write(2) on an O_APPEND file
// descriptor, so a process killed at any moment leaves whole lines plus at most one torn last line,
// which the loader skips and the next writer cuts off before appending. No fsync: a killed process
// loses nothing the kernel already has, and a turn must cost well under a millisecond.
//
// One writer per session at a time: an flock(2) on the file, which the kernel drops however its
// holder dies, so two `conch -c` at once cannot interleave their turns and no stale lock remains.
import { closeSync, constants, fchmodSync, fstatSync, ftruncateSync, readSync, writeSync } from 'node:fs';
import { loadLibc } from '../process/libc.ts';
import { openSessionFile, SessionError } from './dir.ts';
import type { Message, ToolResultMessage } from '../providers/types.ts';
import type { ContentBlock } from '../core/content.ts';
import type { Outcome } from '../agent/outcome.ts';
import { redactor, type SecretValue } from '../core/secret-scrub.ts';
import {
  storeBlocks,
  type EndRecord,
  type HeaderRecord,
  type PolicySnapshot,
  type SessionRecord,
  type StoredMessage,
} from './records.ts';

const LOCK_EX = 2;
const LOCK_NB = 4;

export interface WriterOptions {
  /** Hashes of the images the file already holds. */
  blobs?: Set<string>;
  /** Cut the file to this length first (a torn last line from a killed writer). */
  validBytes?: number;
  /** Values never written (provider keys, --env values), each with the name shown instead. */
  secrets?: SecretValue[];
}

/**
 * Whether a writer (of this process or another) holds the session at `path` now. Takes and drops
 * the writer's lock on a descriptor of its own; false when the file is gone or locks are unknown.
 */
export function writerHolds(path: string): boolean {
  const libc = loadLibc();
  if (!libc) return false;
  let fd: number;
  try {
    fd = openSessionFile(path);
  } catch {
    return false;
  }
  try {
    // flock(2) locks belong to the open file, so a second open conflicts even within one process.
    return libc.flock(fd, LOCK_EX | LOCK_NB) !== 0;
  } finally {
    closeSync(fd); // closing drops the lock if we got it
  }
}

export class SessionWriter {
  private readonly fd: number;
  private readonly blobs: Set<string>;
  private readonly redact: <T>(record: T) => T;
  private runId = '';
  /** Why the file stopped taking records (disk full, removed); the run goes on regardless. */
  failure: string | null = null;

  constructor(readonly id: string, readonly path: string, options: WriterOptions) {
    this.fd = openSessionFile(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT);
    try {
      const libc = loadLibc();
      if (libc && libc.flock(this.fd, LOCK_EX | LOCK_NB) !== 0) {
        throw new SessionError(`session ${id} is being continued by another conch process right now; wait for it to end, or --fork it.`);
      }
      const info = fstatSync(this.fd);
      if ((info.mode & 0o077) !== 0) fchmodSync(this.fd, 0o600);
      if (options.validBytes !== undefined && info.size > options.validBytes) this.endTornLine(options.validBytes, info.size);
    } catch (error) {
      closeSync(this.fd);
      throw error;
    }
    this.blobs = new Set(options.blobs ?? []);
    this.redact = redactor(options.secrets ?? []);
  }

  /**
   * Bytes past the last whole line the loader saw: a torn line (cut off), or whole lines another
   * run appended after the load (kept; a torn line after them is ended so the next record is whole).
   */
  private endTornLine(validBytes: number, size: number): void {
    const extra = Buffer.alloc(size - validBytes);
    readSync(this.fd, extra, 0, extra.length, validBytes);
    if (!extra.includes(10)) ftruncateSync(this.fd, validBytes);
    else if (extra[extra.length - 1] !== 10) writeSync(this.fd, '\n');
  }

  write(record: SessionRecord): void {
    if (this.failure) return;
    if (record.t === 'blob') this.blobs.add(record.hash);
    const bytes = Buffer.from(`${JSON.stringify(this.redact(record))}\n`);
    try {
      let offset = 0;
      // A regular file takes the whole buffer in one write; the loop is for the rare short write.
      while (offset < bytes.length) offset += writeSync(this.fd, bytes, offset);
    } catch (error) {
      this.failure = `cannot write the session file ${this.path}: ${(error as Error).message}`;
    }
  }

  header(header: Omit<HeaderRecord, 't'>): void {
    this.write({ t: 'session', ...header });
  }

  startRun(run: { runId: string; provider: string; model: string; policy: PolicySnapshot }): void {
    this.runId = run.runId;
    this.write({ t: 'run', time: new Date().toISOString(), ...run });
  }

  /** A user or assistant message of the current run. */
  message(message: Exclude<Message, { role: 'tool' }>): void {
    const m: StoredMessage = message.role === 'user' ? { role: 'user', content: this.blocks(message.content) } : message;
    this.write({ t: 'msg', runId: this.runId, m });
  }

  result(result: ToolResultMessage): void {
    this.write({ t: 'result', runId: this.runId, r: { ...result, content: this.blocks(result.content) } });
  }

  end(outcome: Outcome): void {
    const record: EndRecord = {
      t: 'end',
      runId: this.runId,
      time: new Date().toISOString(),
      status: outcome.status,
      ...(outcome.code ? { code: outcome.code } : {}),
      ...(outcome.limit ? { limit: outcome.limit } : {}),
      ...(outcome.message ? { message: outcome.message } : {}),
      counts: outcome.counts,
      durationMs: outcome.durationMs,
    };
    this.write(record);
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // closed already
    }
  }

  private blocks(content: ContentBlock[]) {
    return storeBlocks(content, (hash, image) => {
      if (this.blobs.has(hash)) return;
      this.write({ t: 'blob', hash, mediaType: image.mediaType, data: image.data });
    });
  }
}
