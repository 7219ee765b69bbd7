// Placeholders outlive a conch process that is killed without running its exit hook (SIGKILL, a
// closed terminal before the handlers are in place, an out-of-memory kill). So that such leftovers
// can be recovered, every process records the placeholders it holds in a file of its own under the
// per-user state directory (user-dir.ts): placeholders/<pidns>-<pid>-<starttime>.json, rewritten
// (write + rename) when the set changes. One file per process means no locking: a process only ever
// writes its own file, and reads or deletes the files of processes that are gone.
//
// recoverLeftovers() runs at the start of every sandboxed command: one readdir, and for each other
// process's file a look at /proc/<pid>/stat (is that very process, same start time, still alive?).
// Only the files of dead processes are read. A recorded placeholder is removed only when it is still
// the very inode conch created (dev, ino, birth time), still empty, with the mode and owner it was
// created with; anything a user replaced, wrote into or chmodded is theirs and stays. A record is
// written after its placeholder exists and dropped before it is removed, so a record never names a
// path that is not (or no longer) conch's. A process in another pid namespace cannot be judged from
// here, so its files are left alone.
//
// Limits, honestly: the record is written right after a command's placeholders are created, so a
// kill inside that window (a few syscalls) leaves an unrecorded placeholder behind. And a placeholder
// a dead process left is, for a live process, an existing path it binds read-only; when another
// conch process removes it while such a command runs, that command's mount of it goes away with it.
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { PathKind } from './protected-paths.ts';
import { userStateDir } from './user-dir.ts';

export interface PlaceholderRecord {
  path: string;
  kind: PathKind;
  dev: number;
  ino: number;
  /** Permission bits at creation (0444 for files, less under a strict umask). */
  mode: number;
  /** Birth time in ms where the filesystem reports one (0 otherwise): inode numbers get reused. */
  birth: number;
}

interface Self {
  ns: string;
  name: string;
}

let self: Self | null | undefined;
let counter = 0;

/** Field 22 of /proc/PID/stat (start time in clock ticks since boot), or null when unreadable. */
function startTime(pid: number | 'self'): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may contain spaces and parentheses: count from its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

function pidNamespace(): string | null {
  try {
    return readlinkSync('/proc/self/ns/pid').replace(/\D/g, '') || null;
  } catch {
    return null;
  }
}

/** This process's identity, or null where records cannot be kept (no /proc: not Linux). */
function identity(): Self | null {
  if (self !== undefined) return self;
  const ns = pidNamespace();
  const start = startTime('self');
  self = ns && start ? { ns, name: `${ns}-${process.pid}-${start}.json` } : null;
  return self;
}

function recordsDir(): string | null {
  const dir = userStateDir();
  if (!dir.shared) return null; // nobody else would ever look there
  const path = join(dir.path, 'placeholders');
  try {
    mkdirSync(path, 0o700);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  return path;
}

function writeAtomically(file: string, text: string): void {
  const staging = `${file}.${process.pid}.${++counter}.tmp`;
  const fd = openSync(staging, 'wx', 0o600);
  try {
    writeSync(fd, text); // no fsync: a killed process's page cache survives it, and a reboot clears /tmp
  } finally {
    closeSync(fd);
  }
  renameSync(staging, file);
}

function removeFile(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already
  }
}

/** Replace this process's record with `records` (none: the file is removed). Never throws. */
export function saveRecords(records: PlaceholderRecord[]): void {
  try {
    const me = identity();
    const dir = me && recordsDir();
    if (!me || !dir) return;
    const file = join(dir, me.name);
    if (records.length === 0) removeFile(file);
    else writeAtomically(file, JSON.stringify(records));
  } catch {
    // a record is a recovery aid; failing to keep one must not stop the command
  }
}

type Liveness = 'alive' | 'dead' | 'unknown';

/** Whose file this is (a record, or a staging file a killed process left), and is it alive. */
function owner(name: string, me: Self): Liveness {
  const match = /^(\d+)-(\d+)-(\d+)\.json(\.\d+\.\d+\.tmp)?$/.exec(name);
  if (!match) return 'unknown';
  const [, ns, pid, start] = match;
  if (ns !== me.ns) return 'unknown';
  const now = startTime(Number(pid));
  if (now === null) return 'dead'; // no such process (its /proc entry is gone)
  return now === start ? 'alive' : 'dead'; // same pid, later start: a new process reused the pid
}

function isRecord(value: unknown): value is PlaceholderRecord {
  const r = value as PlaceholderRecord;
  return (
    typeof r === 'object' && r !== null && typeof r.path === 'string' && r.path.startsWith('/') &&
    (r.kind === 'dir' || r.kind === 'file') && typeof r.dev === 'number' && typeof r.ino === 'number' &&
    typeof r.mode === 'number' && typeof r.birth === 'number'
  );
}

/** Remove one leftover if it is still exactly what conch created. */
function removeLeftover(record: PlaceholderRecord): void {
  try {
    const info = lstatSync(record.path);
    if (info.dev !== record.dev || info.ino !== record.ino || info.birthtimeMs !== record.birth) return;
    if (info.uid !== (process.getuid?.() ?? info.uid) || (info.mode & 0o7777) !== record.mode) return;
    if (record.kind === 'dir') {
      if (info.isDirectory()) rmdirSync(record.path); // refuses when not empty: theirs now
    } else if (info.isFile() && info.size === 0) {
      unlinkSync(record.path);
    }
  } catch {
    // gone, or no longer empty: either way not conch's to remove
  }
}

/**
 * Remove the placeholders that conch processes which are gone left behind. `inUse(path)`: this
 * process has a command running that holds the path as it is; such a record is kept for later.
 * Never throws.
 */
export function recoverLeftovers(inUse: (path: string) => boolean): void {
  try {
    const me = identity();
    const dir = me && recordsDir();
    if (!me || !dir) return;
    for (const name of readdirSync(dir)) {
      if (name.startsWith(me.name) || owner(name, me) !== 'dead') continue;
      try {
        recoverFile(join(dir, name), inUse);
      } catch {
        // another process is recovering the same file; whatever is left, a later command sees
      }
    }
  } catch {
    // recovery is best effort; the command itself does not depend on it
  }
}

function recoverFile(file: string, inUse: (path: string) => boolean): void {
  if (!file.endsWith('.json')) {
    removeFile(file); // staging left by a process killed before its rename
    return;
  }
  let records: unknown;
  try {
    records = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    records = [];
  }
  const kept: PlaceholderRecord[] = [];
  for (const record of Array.isArray(records) ? records.filter(isRecord) : []) {
    if (inUse(record.path)) kept.push(record);
    else removeLeftover(record);
  }
  if (kept.length === 0) removeFile(file);
  else writeAtomically(file, JSON.stringify(kept));
}
