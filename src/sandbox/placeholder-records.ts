// Which placeholders each conch process uses, shared by all conch processes of the user: every
// process keeps a file of its own under the per-user state directory (user-dir.ts), named
// placeholders/<pidns>-<pid>-<starttime>.json and rewritten (write + rename) when its set changes.
// It lists every placeholder the process uses, whether it created it or found another process's
// and bound it too. Those files are the reference counts across processes: a placeholder is removed
// only when no live process lists it, so one run ending never takes the protection away from
// another run in the same workspace (on Linux, unlinking a mount point in another mount namespace
// detaches that mount: the other run's sandbox would lose it). The decisions are made under the
// user lock (user-lock.ts), so "nobody else uses it, remove it" cannot interleave with "it exists,
// use it".
//
// A process's liveness is judged by /proc/<pid>/stat (that very process, same start time). The
// files of processes that are gone (SIGKILL: no exit hook ran) are recovered by the next run of any
// conch process of the user: their placeholders are removed unless a live process uses them, and
// only when each is still the very inode conch created (dev, ino, birth time), still empty, with
// the mode and owner it was created with; anything a user replaced, wrote into or chmodded is theirs
// and stays. A process in another pid namespace cannot be judged from here: its files count as live.
//
// A run whose writable paths contain another run's placeholders (its workspace around the other's)
// binds them read-only too (othersLiveInside), or its command could remove one from under the other
// run's command. Only from its next command on: one already running when the other run starts has
// no mount there, and can still remove what that run creates.
//
// Limits, honestly: processes of different users (or TMPDIRs, or containers) keep separate state,
// so a placeholder of such a conch looks like a real path to this one; placeholder-locks.ts keeps
// either from removing one the other binds, but a run around such a conch's workspace does not bind
// its placeholders. Without flock (see user-lock.ts) or a shared state directory, the coordination
// is skipped and each process counts only its own uses.
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { PathKind } from './protected-paths.ts';
import { whileUnused } from './placeholder-locks.ts';
import { userStateDir } from './user-dir.ts';
import { liveness, selfTag, type Liveness } from '../process/identity.ts';

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

/** This process's identity, or null where records cannot be kept (no /proc: not Linux). */
function identity(): Self | null {
  if (self !== undefined) return self;
  const tag = selfTag();
  self = tag ? { ns: tag.ns, name: `${tag.ns}-${tag.pid}-${tag.start}.json` } : null;
  return self;
}

/** `create`: for writing one's own record; a reader finds nothing where there is no directory. */
function recordsDir(create = true): string | null {
  const dir = userStateDir();
  if (!dir.shared) return null; // nobody else would ever look there
  const path = join(dir.path, 'placeholders');
  if (!create) return path; // read before every command: no mkdir (and its EEXIST) each time
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

/** Whose file this is (a record, or a staging file a killed process left), and is it alive. */
function owner(name: string, me: Self): Liveness {
  const match = /^(\d+)-(\d+)-(\d+)\.json(\.\d+\.\d+\.tmp)?$/.exec(name);
  if (!match) return 'unknown';
  const [, ns, pid, start] = match;
  if (ns !== me.ns) return 'unknown';
  return liveness({ ns: ns!, pid: Number(pid), start: start! });
}

function isRecord(value: unknown): value is PlaceholderRecord {
  const r = value as PlaceholderRecord;
  return (
    typeof r === 'object' && r !== null && typeof r.path === 'string' && r.path.startsWith('/') &&
    (r.kind === 'dir' || r.kind === 'file') && typeof r.dev === 'number' && typeof r.ino === 'number' &&
    typeof r.mode === 'number' && typeof r.birth === 'number'
  );
}

/** What the other conch processes of this user record: the live ones' uses and the dead ones' files. */
export interface OtherRecords {
  live: PlaceholderRecord[];
  dead: { file: string; records: PlaceholderRecord[] }[];
}

function readList(file: string): PlaceholderRecord[] {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return Array.isArray(parsed) ? parsed.filter(isRecord) : [];
  } catch {
    return []; // gone meanwhile, or half-written by a process killed before its rename
  }
}

/** Read every other process's record (one readdir, one read per file). Never throws. */
export function readOthers(): OtherRecords {
  const out: OtherRecords = { live: [], dead: [] };
  try {
    const me = identity();
    const dir = me && recordsDir(false);
    if (!me || !dir) return out;
    for (const name of readdirSync(dir)) {
      if (name.startsWith(me.name)) continue;
      const file = join(dir, name);
      const liveness = owner(name, me);
      if (!name.endsWith('.json')) {
        if (liveness === 'dead') removeFile(file); // staging left by a process killed before its rename
        continue;
      }
      if (liveness === 'dead') out.dead.push({ file, records: readList(file) });
      else out.live.push(...readList(file));
    }
  } catch {
    // no records directory: nobody else records anything
  }
  return out;
}

/**
 * The placeholders other live conch processes use at paths `inside` accepts (where this run's
 * commands could remove them), each still the inode recorded: a record only names a path, and what
 * was put there since (a link to the home directory) is not bound on its word. With no other
 * process recording anything, one readdir. Never throws.
 */
export function othersLiveInside(inside: (path: string) => boolean): PlaceholderRecord[] {
  return readOthers().live.filter((record) => inside(record.path) && stillThere(record));
}

/** Whether the record's path still holds the very file or directory it was made as. */
export function stillThere(record: PlaceholderRecord): boolean {
  let info: Stats | undefined;
  try {
    info = lstatSync(record.path, { throwIfNoEntry: false });
  } catch {
    return false; // ENOTDIR: a file put in place of its directory
  }
  if (!info || info.dev !== record.dev || info.ino !== record.ino || info.birthtimeMs !== record.birth) return false;
  return record.kind === 'dir' ? info.isDirectory() : info.isFile();
}

export function sameRecord(a: PlaceholderRecord, b: PlaceholderRecord): boolean {
  return a.path === b.path && a.dev === b.dev && a.ino === b.ino && a.birth === b.birth;
}

/** The record of the placeholder now at `path`, if it is still exactly what a conch process created. */
export function untouched(records: PlaceholderRecord[], path: string, info: Stats): PlaceholderRecord | null {
  for (const record of records) {
    if (record.path !== path || info.dev !== record.dev || info.ino !== record.ino || info.birthtimeMs !== record.birth) continue;
    if (info.uid !== (process.getuid?.() ?? info.uid) || (info.mode & 0o7777) !== record.mode) return null;
    if (record.kind === 'dir' ? info.isDirectory() : info.isFile() && info.size === 0) return record;
    return null;
  }
  return null;
}

/**
 * Remove one placeholder if it is still exactly what conch created (a directory only while empty)
 * and no process binds it as a found file (placeholder-locks.ts): 'in-use' then, and it stays.
 */
export function removePlaceholder(record: PlaceholderRecord): 'done' | 'in-use' {
  try {
    return whileUnused(record.path, (info) => {
      if (!untouched([record], record.path, info)) return;
      if (record.kind === 'dir') rmdirSync(record.path); // refuses when not empty: theirs now
      else unlinkSync(record.path);
    });
  } catch {
    return 'done'; // gone, or no longer empty: either way not conch's to remove
  }
}

/**
 * Remove what dead processes left, except placeholders a live process (or `inUse`: this one) uses,
 * and drop their files; a file keeps what another process still binds, for a later recovery. Never
 * throws.
 */
export function recoverDead(others: OtherRecords, inUse: (record: PlaceholderRecord) => boolean): void {
  for (const { file, records } of others.dead) {
    const kept: PlaceholderRecord[] = [];
    for (const record of records) {
      if (inUse(record) || others.live.some((used) => sameRecord(used, record))) continue;
      if (removePlaceholder(record) === 'in-use') kept.push(record);
    }
    if (kept.length === 0) removeFile(file);
    else if (kept.length < records.length) {
      try {
        writeAtomically(file, JSON.stringify(kept));
      } catch {
        // tried again by the next recovery, with the file as it was
      }
    }
  }
  others.dead = [];
}
