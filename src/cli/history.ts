// The interactive prompt's history, kept across sessions in the state directory
// ($XDG_STATE_HOME/conch/history): one JSON string per line, so a submission of several lines is
// one record. Several conch processes may share the file: each record is appended whole with one
// write to a file opened O_APPEND (they never interleave), and trimming to the newest entries
// writes a temporary file renamed over the old one, so a reader sees the old file or the new one.
// Appends and trims take one lock (flock on history.lock beside it): an append between a trim's
// read and its rename went to the file the rename replaced, and was lost.
// History is a convenience: a file that cannot be read or written never stops the prompt (one
// warning says so), and lines that are no record are skipped.
import { closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { historyTempOf } from '../config/xdg.ts';
import { loadLibc } from '../process/libc.ts';

/** Entries kept; the file is trimmed back to this many once it holds a tenth more. */
export const HISTORY_KEEP = 1000;

export interface HistoryStore {
  /** The entries on file, oldest first (consecutive duplicates merged). */
  readonly entries: string[];
  /** Store one submission (empty text and a repeat of the newest entry are not stored). */
  add(text: string): void;
  /** Make the file if it is missing: the sandbox hides only paths that exist from commands. */
  touch(): void;
}

/** Opens the history at `file`; `warn` gets at most one line for the life of the store. */
export function openHistory(file: string, warn: (line: string) => void, keep = HISTORY_KEEP): HistoryStore {
  let warned = false;
  const once = (line: string) => {
    if (!warned) warn(line);
    warned = true;
  };
  const loaded = readEntries(file, once);
  const entries = loaded.entries;
  // What this process knows is on file, to trim without reading it at every submission.
  let onFile = loaded.records;
  return {
    entries,
    touch() {
      try {
        ensureDir(file);
        closeSync(openOwn(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT));
      } catch (error) {
        once(cannotSave(file, error));
      }
    },
    add(text) {
      if (!text.trim() || entries.at(-1) === text) return;
      entries.push(text);
      if (entries.length > keep) entries.splice(0, entries.length - keep);
      try {
        ensureDir(file);
        locked(file, () => {
          append(file, text);
          onFile++;
          if (onFile > keep + Math.ceil(keep / 10)) onFile = trim(file, keep);
        });
      } catch (error) {
        once(cannotSave(file, error));
      }
    },
  };
}

const cannotSave = (file: string, error: unknown) =>
  `the prompt history cannot be saved to ${file} (${reason(error)}); this session's stays in memory. Fix the folder's permissions, or turn history off ("history": false in config.json, or CONCH_HISTORY=0).`;

function readEntries(file: string, warn: (line: string) => void): { entries: string[]; records: number } {
  let text: string;
  try {
    const fd = openOwn(file, constants.O_RDONLY);
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTDIR: a file where a folder would go, which creating the folder reports.
    const missing = code === 'ENOENT' || code === 'ENOTDIR';
    if (!missing) warn(`the prompt history ${file} cannot be read (${reason(error)}); the prompt starts without it.`);
    return { entries: [], records: 0 };
  }
  const { entries, bad, records } = parse(text);
  if (bad) warn(`${file}: ${bad} line${bad === 1 ? '' : 's'} of the prompt history ${bad === 1 ? 'is' : 'are'} not a JSON string and ${bad === 1 ? 'was' : 'were'} skipped.`);
  return { entries, records };
}

/** The records of a history file, oldest first; a line that is not one is counted in `bad`. */
export function parse(text: string): { entries: string[]; bad: number; records: number } {
  const entries: string[] = [];
  let bad = 0;
  let records = 0;
  const lines = text.split('\n');
  // A last line without its newline is another process's append still being written (a reader can
  // see part of a write): not a record yet, and no damage.
  lines.pop();
  for (const line of lines) {
    if (!line.trim()) continue;
    records++;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      value = undefined;
    }
    if (typeof value !== 'string') {
      bad++;
      continue;
    }
    if (value.trim() && entries.at(-1) !== value) entries.push(value);
  }
  return { entries, bad, records };
}

const record = (text: string) => Buffer.from(`${JSON.stringify(text)}\n`);

function ensureDir(file: string): void {
  // The state folder may hold prompts with secrets in them: the user's alone.
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
}

function append(file: string, text: string): void {
  ensureDir(file);
  const fd = openOwn(file, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT);
  try {
    const info = fstatSync(fd);
    if ((info.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    // A last line cut short (a process killed mid-write, an edit) must not swallow this record.
    const last = Buffer.alloc(1);
    const cut = info.size > 0 && readSync(fd, last, 0, 1, info.size - 1) === 1 && last[0] !== 0x0a;
    const data = Buffer.concat([cut ? Buffer.from('\n') : Buffer.alloc(0), record(text)]);
    // One write of the whole record: O_APPEND puts it at the end, after any other process's.
    const written = writeSync(fd, data);
    if (written !== data.length) throw new Error(`short write (${written} of ${data.length} bytes)`);
  } finally {
    closeSync(fd);
  }
}

const LOCK_EX = 2;
const LOCK_NB = 4;
/**
 * How long an append waits for another process's append or trim (a few syscalls; longer only for a
 * conch stopped with Ctrl-Z inside them) before it goes on without the lock, as history is a convenience.
 */
const LOCK_WAIT_MS = 1000;
const pause = new Int32Array(new SharedArrayBuffer(4));

/** `work` under the history's lock; where there is no flock (not Linux), without it. */
function locked(file: string, work: () => void): void {
  const libc = loadLibc();
  if (!libc) return work();
  // Opened as the history is (never through a link, only the user's own); closing it lets go. One
  // that cannot be (a link left there) costs the lock, not the record.
  let fd: number;
  try {
    fd = openOwn(`${file}.lock`, constants.O_RDWR | constants.O_CREAT);
  } catch {
    return work();
  }
  try {
    for (const end = Date.now() + LOCK_WAIT_MS; libc.flock(fd, LOCK_EX | LOCK_NB) !== 0 && Date.now() < end; ) Atomics.wait(pause, 0, 0, 5);
    work();
  } finally {
    closeSync(fd);
  }
}

/** Rewrites the file with its newest `keep` records; returns how many it holds. */
function trim(file: string, keep: number): number {
  const temp = historyTempOf(file, process.pid);
  try {
    // Under the lock no other conch appends meanwhile; where there is none (or it was not had in
    // time), a file that grew after it was read is read again.
    for (let attempt = 0; ; attempt++) {
      const size = statSync(file).size;
      const source = openOwn(file, constants.O_RDONLY);
      let text: string;
      try {
        text = readFileSync(source, 'utf8');
      } finally {
        closeSync(source);
      }
      const lines = text.split('\n');
      // As in parse(): a last line without its newline is an append under way, not a record to keep.
      lines.pop();
      const kept = lines.filter((l) => l.trim()).slice(-keep);
      // wx after removing what is there: never written through a link left at the name.
      rmSync(temp, { force: true });
      const fd = openSync(temp, 'wx', 0o600);
      try {
        writeSync(fd, kept.length ? `${kept.join('\n')}\n` : '');
      } finally {
        closeSync(fd);
      }
      if (statSync(file).size !== size && attempt < 3) continue;
      renameSync(temp, file);
      return kept.length;
    }
  } finally {
    rmSync(temp, { force: true });
  }
}

/**
 * The history file opened never through a link and only as a regular file of this user's: what the
 * user typed (secrets among it) is not appended to whatever a link at the name leads to, and a FIFO
 * there does not hang the prompt. The folder is the user's own; this holds where it is not
 * (XDG_STATE_HOME on a shared disk) as well.
 */
function openOwn(file: string, flags: number): number {
  const fd = openSync(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600);
  const info = fstatSync(fd);
  const uid = process.getuid?.() ?? info.uid;
  if (info.isFile() && info.uid === uid) return fd;
  closeSync(fd);
  throw Object.assign(new Error(info.isFile() ? 'it is not yours' : 'it is not a regular file'), { code: info.isFile() ? 'NOTOWN' : 'NOTFILE' });
}

function reason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return 'it is a link; remove it';
  if (code === 'NOTOWN' || code === 'NOTFILE') return `${(error as Error).message}; remove it`;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'ENOTDIR' || code === 'EEXIST') return 'a file is where a folder on its path would be';
  return code ?? String((error as Error).message ?? error);
}
