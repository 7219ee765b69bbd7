// The session store: one `<id>.jsonl` per session in a private directory. Finding a session (by id,
// unique prefix, or the latest of a workspace), starting, continuing and forking one, and removing
// old ones.
import { readdirSync, readSync, closeSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, openSessionFile, SessionError, SessionNotFoundError } from './dir.ts';
import { loadSession, type LoadedSession } from './load.ts';
import { SESSION_FORMAT, SESSION_VERSION, type HeaderRecord } from './records.ts';
import { SessionWriter, writerHolds } from './writer.ts';
import type { LatestIndex } from './latest.ts';
import { randomHex } from '../core/random.ts';

const FILE = /^([0-9a-f]{16})\.jsonl$/;

export interface StoredFile {
  id: string;
  path: string;
  mtimeMs: number;
}

export class SessionStore {
  /** `latestIndex`: where -c finds a workspace's latest session without a scan (none: always scan). */
  constructor(readonly dir: string, private readonly latestIndex: LatestIndex | null = null) {}

  /** Session files (those whose id starts with `idPrefix`), newest activity first. */
  files(idPrefix = ''): StoredFile[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: StoredFile[] = [];
    for (const name of names) {
      const m = FILE.exec(name);
      // Only the files asked for are stat'ed: --resume in a store of hundreds stat'ed them all.
      if (!m || !m[1]!.startsWith(idPrefix)) continue;
      const path = join(this.dir, name);
      try {
        out.push({ id: m[1]!, path, mtimeMs: statSync(path).mtimeMs });
      } catch {
        // removed meanwhile
      }
    }
    return out.sort((a, b) => b.mtimeMs - a.mtimeMs);
  }

  /**
   * A full id or a unique prefix of one. With `cwd` (--resume, which refuses another workspace's
   * session anyway) a prefix is unique when one of its sessions is that workspace's.
   */
  resolve(idOrPrefix: string, cwd?: string): StoredFile {
    const wanted = idOrPrefix.trim().toLowerCase();
    if (!/^[0-9a-f]+$/.test(wanted)) {
      throw new SessionNotFoundError(`'${idOrPrefix}' is not a session id (ids are hex, e.g. 7f3c2a…); \`conch sessions\` lists them.`);
    }
    const hits = this.files(wanted);
    if (hits.length === 0) throw new SessionNotFoundError(`no session '${idOrPrefix}' in ${this.dir}; \`conch sessions --all\` lists them.`);
    const here = hits.length > 1 && cwd !== undefined ? hits.filter((h) => headerCwd(h.path) === cwd) : [];
    if (here.length === 1) return here[0]!;
    if (hits.length > 1) {
      const listed = hits.slice(0, 5).map((h) => h.id).join(', ');
      // Saying "matches 7" while naming 5 reads as a miscount unless the rest are owned up to.
      const rest = hits.length > 5 ? ` and ${hits.length - 5} more` : '';
      throw new SessionError(`'${idOrPrefix}' matches ${hits.length} sessions (${listed}${rest}); give more of the id.`);
    }
    return hits[0]!;
  }

  /**
   * The most recently active session of this workspace, if any. A newer file whose first line is
   * whole but no session header (damaged) may be that session: -c refuses to guess past it. A file
   * with no whole line yet (killed before its header was written) holds nothing and is passed over.
   */
  latest(cwd: string): StoredFile | null {
    const hinted = this.latestIndex?.read(cwd);
    if (hinted) {
      const path = join(this.dir, `${hinted}.jsonl`);
      // The entry is trusted only as far as the file it names is this workspace's session.
      if (headerCwd(path) === cwd) {
        try {
          return { id: hinted, path, mtimeMs: statSync(path).mtimeMs };
        } catch {
          // removed meanwhile
        }
      }
    }
    let found: StoredFile | null = null;
    let damaged: StoredFile | null = null;
    for (const file of this.files()) {
      const header = headerCwd(file.path);
      if (header === DAMAGED) damaged ??= file;
      else if (header === cwd) {
        found = file;
        break;
      }
    }
    if (damaged) {
      const before = found ? `\`conch --resume ${found.id}\` continues the one before it` : '`conch --resume ID` continues another (`conch sessions --all` lists them)';
      throw new SessionError(
        `the newest session file ${damaged.path} is damaged (its first line is not a session header), so -c cannot tell whether it is this workspace's latest session: ${before}; delete or move that file to make -c work again.`,
      );
    }
    if (this.latestIndex) {
      if (found) this.latestIndex.write(cwd, found.id);
      else this.latestIndex.forget(cwd);
      this.latestIndex.sweep();
    }
    return found;
  }

  /** A run of session `id` (of workspace `cwd`) starts or ends: it is now the workspace's latest. */
  noteActive(cwd: string, id: string): void {
    // Reading is cheaper than a write (no rename): a run of the latest session writes nothing.
    if (this.latestIndex && this.latestIndex.read(cwd) !== id) this.latestIndex.write(cwd, id);
  }

  /** Load a session for continuing in `cwd`; a session of another workspace is refused. */
  loadFor(file: StoredFile, cwd: string): LoadedSession {
    const loaded = loadSession(file.path);
    if (loaded.header.cwd !== cwd) {
      throw new SessionError(
        `session ${loaded.header.id} belongs to ${loaded.header.cwd}, not to this directory (${cwd}); run conch there to continue it.`,
      );
    }
    return loaded;
  }

  /** The store's directory exists and is private: a new session can be written there (else a SessionError). */
  ready(): void {
    ensurePrivateDir(this.dir);
  }

  /** A new, empty session (its header written). */
  create(cwd: string, secrets: WriterSecrets = [], parent: HeaderRecord['parent'] = null, id = newSessionId()): SessionWriter {
    ensurePrivateDir(this.dir);
    const writer = new SessionWriter(id, join(this.dir, `${id}.jsonl`), { secrets });
    writer.header({ format: SESSION_FORMAT, version: SESSION_VERSION, id, cwd, created: new Date().toISOString(), parent });
    return writer;
  }

  /** Append to a loaded session. */
  continue(loaded: LoadedSession, secrets: WriterSecrets = []): SessionWriter {
    ensurePrivateDir(this.dir);
    return new SessionWriter(loaded.header.id, loaded.path, { blobs: loaded.blobs, validBytes: loaded.validBytes, secrets });
  }

  /** A new session holding the loaded one's records; the parent file is not touched. */
  fork(loaded: LoadedSession, secrets: WriterSecrets = [], id = newSessionId()): SessionWriter {
    const writer = this.create(loaded.header.cwd, secrets, { id: loaded.header.id, runs: loaded.runs.length }, id);
    for (const record of loaded.records) writer.write(record);
    return writer;
  }

  remove(idOrPrefix: string): string {
    const file = this.resolve(idOrPrefix);
    unlinkSync(file.path);
    return file.id;
  }

  /**
   * Remove sessions last active before `olderThanMs` ago, and beyond the newest `keep` (0 = no
   * cap). `spare` is never removed (the session in use), nor is any session a writer holds open.
   */
  prune(options: { olderThanMs?: number; keep?: number; spare?: string }): string[] {
    const now = Date.now();
    const removed: string[] = [];
    const files = this.files();
    // The session in use is one of those kept, whatever its age.
    let kept = files.some((f) => f.id === options.spare) ? 1 : 0;
    for (const file of files) {
      if (file.id === options.spare) continue;
      const old = options.olderThanMs !== undefined && now - file.mtimeMs > options.olderThanMs;
      const over = options.keep !== undefined && options.keep > 0 && kept >= options.keep;
      // A session some run writes to right now (another task of `conch run A B`, another conch) stays.
      if ((old || over) && !writerHolds(file.path)) {
        try {
          unlinkSync(file.path);
          removed.push(file.id);
        } catch {
          // gone already
        }
      } else kept++;
    }
    return removed;
  }
}

/** 16 hex digits: short enough to type a prefix of, long enough never to collide in one store. */
export function newSessionId(): string {
  return randomHex(8);
}

export type WriterSecrets = { name: string; value: string }[];

// One buffer for every header read, and only the header line decoded: finding the latest session
// of a workspace in a store of 500 allocated, zero-filled and decoded 4 MB.
const headerBuffer = Buffer.allocUnsafe(8192);

/** What headerCwd says of a file whose first line is whole but no session header. */
const DAMAGED = Symbol('damaged');

/**
 * The workspace in a file's header, reading only its first line (listing must stay cheap); null when
 * there is no file or no whole first line (a header never written), DAMAGED when that line is no header.
 */
export function headerCwd(path: string): string | null | typeof DAMAGED {
  let fd: number;
  try {
    fd = openSessionFile(path);
  } catch {
    return null;
  }
  try {
    const n = readSync(fd, headerBuffer, 0, headerBuffer.length, 0);
    const nl = headerBuffer.subarray(0, n).indexOf(10);
    // No newline in a full buffer: far longer than any header.
    if (nl === -1) return n === headerBuffer.length ? DAMAGED : null;
    const header = JSON.parse(headerBuffer.toString('utf8', 0, nl)) as Partial<HeaderRecord>;
    return header?.t === 'session' && typeof header.cwd === 'string' ? header.cwd : DAMAGED;
  } catch {
    return DAMAGED;
  } finally {
    closeSync(fd);
  }
}
