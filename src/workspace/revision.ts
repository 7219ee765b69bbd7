// Revisions: the SHA-256 of a file's whole content. The tracker remembers, per canonical path, the
// revision conch last saw (read or wrote) in this run, so write/edit can refuse to clobber a file
// that changed behind the model's back.
import { constants, type BigIntStats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';

export const HASH_CHUNK_BYTES = 1 << 20;
/**
 * Bytes read of a regular file that reports a size of 0 (procfs, sysfs): its size says nothing of
 * its length, and some hardly end (/proc/self/pagemap spans the whole address space, 256 GiB).
 */
export const PSEUDO_FILE_MAX_BYTES = 1 << 20;

/**
 * Where reading a file stops: at the size it had when opened, so a file that keeps growing (a
 * command appending to it) is not chased forever; at `pseudoMax` for a pseudo-file.
 */
export function readEnd(st: { size: bigint | number }, pseudoMax = PSEUDO_FILE_MAX_BYTES): number {
  const size = Number(st.size);
  return size > 0 ? size : pseudoMax;
}

export function revisionOf(bytes: Uint8Array | string): string {
  return new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
}

export function createHasher(): { update(bytes: Uint8Array): void; digest(): string } {
  const hasher = new Bun.CryptoHasher('sha256');
  return {
    update: (bytes) => void hasher.update(bytes),
    digest: () => hasher.digest('hex'),
  };
}

/** A line start whose number is known: lets a later page seek instead of rescanning the file. */
export interface Checkpoint {
  offset: number;
  line: number;
}

/** What one full pass over a file established. */
export interface FileFacts {
  revision: string;
  /** Present when the pass also counted lines (text files read by `read`). */
  lines?: { total: number; checkpoints: Checkpoint[] };
}

interface CacheEntry {
  identity: string;
  facts: FileFacts;
}

/** dev, inode, size, mtime and ctime in nanoseconds: any content write changes at least one. */
export function identityOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

export interface RevisionTrackerOptions {
  /**
   * A file whose ctime is this close to the moment we started hashing it may be rewritten within
   * the same timestamp tick without changing its stat, so its facts are not cached. 2 s covers the
   * coarsest common file systems (FAT); on ext4/APFS the real window is milliseconds.
   */
  racyWindowMs?: number;
}

export class RevisionTracker {
  private readonly seen = new Map<string, string>();
  private readonly cache = new Map<string, CacheEntry>();
  private readonly racyWindowMs: number;

  constructor(options: RevisionTrackerOptions = {}) {
    this.racyWindowMs = options.racyWindowMs ?? 2_000;
  }

  /** Remember that conch saw `revision` at `path` (after a read or a write). */
  record(path: string, revision: string): void {
    this.seen.set(path, revision);
  }

  lastSeen(path: string): string | undefined {
    return this.seen.get(path);
  }

  /** True when conch saw the file in this run and it is unchanged since. */
  unchangedSinceSeen(path: string, currentRevision: string): boolean {
    return this.seen.get(path) === currentRevision;
  }

  /** Cached facts for a file, valid only while its stat identity is unchanged. */
  cached(path: string, st: BigIntStats): FileFacts | undefined {
    const entry = this.cache.get(path);
    if (!entry) return undefined;
    if (entry.identity === identityOf(st)) return entry.facts;
    this.cache.delete(path);
    return undefined;
  }

  /**
   * Cache facts gathered by a pass that started at `startedAtMs` (wall clock) over a file whose
   * stat, taken before the pass, was `st`. Racily fresh files are not cached (see racyWindowMs).
   */
  remember(path: string, st: BigIntStats, facts: FileFacts, startedAtMs: number): void {
    const changedMs = Number(st.ctimeNs > st.mtimeNs ? st.ctimeNs : st.mtimeNs) / 1e6;
    if (changedMs >= startedAtMs - this.racyWindowMs) {
      this.cache.delete(path);
      return;
    }
    this.cache.set(path, { identity: identityOf(st), facts });
  }

  /** Forget cached facts (after conch itself rewrote the file). */
  invalidate(path: string): void {
    this.cache.delete(path);
  }

  /** The current revision of a file, hashed in chunks (never loaded whole) unless cached. */
  async currentRevision(path: string, signal?: AbortSignal): Promise<string> {
    // Non-blocking: a path swapped for a FIFO must not hang the run.
    const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    try {
      const st = await fh.stat({ bigint: true });
      if (!st.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: 'EINVAL' });
      return await this.revisionOfHandle(path, fh, st, signal);
    } finally {
      await fh.close();
    }
  }

  /** The revision of an already opened file (e.g. through a pinned directory), cached under `path`. */
  async revisionOfHandle(path: string, fh: FileHandle, st: BigIntStats, signal?: AbortSignal, end = readEnd(st)): Promise<string> {
    const hit = this.cached(path, st);
    if (hit) return hit.revision;
    const startedAt = Date.now();
    const hasher = createHasher();
    const buffer = Buffer.allocUnsafe(HASH_CHUNK_BYTES);
    for (let position = 0; position < end; ) {
      signal?.throwIfAborted();
      const { bytesRead } = await fh.read(buffer, 0, Math.min(buffer.length, end - position), position);
      if (bytesRead === 0) break;
      hasher.update(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
    const revision = hasher.digest();
    this.remember(path, st, { revision }, startedAt);
    return revision;
  }
}
