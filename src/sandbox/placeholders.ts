// Placeholders: empty files or directories conch creates on the host at a protected name that does
// not exist yet, so bubblewrap has something to bind read-only over it (a mount needs a mount point,
// and the workspace is the host's directory).
//
// They are held by a scope (PlaceholderScope): a run keeps one for all its commands, so each
// placeholder is created once per run, on the first command that needs it, and removed when the run
// ends and its last command is over; not a dozen files created and removed around every command,
// which file watchers and a concurrent `git add -A` would see. A command without a run (`conch
// sandbox run`) gets a scope of its own.
//
// Every use is counted: per scope within this process (entries), and across the user's conch
// processes through their records (placeholder-records.ts), so a run that ends never removes a
// placeholder another run still binds. All of it is synchronous on purpose: a handful of local
// syscalls, done without yielding to the event loop and under the user lock (user-lock.ts), so
// "last use ends, remove it" can never interleave with "it exists, use it".
//
// Removal is conservative: only the very inode conch created, and only while it is still empty. If
// the user (or another process) put something there in the meantime, it is theirs and stays.
//
// File placeholders are mode 0444. When conch does not run as root, those made together share one
// inode: the first is created, the others are hard links to it (creating an inode costs ~40x a link
// on a journaling filesystem). The mode keeps the user's in-place writes out, so nothing written to
// one name can appear under another; an editor that saves by rename replaces the inode and keeps its
// file. Root ignores file modes, so as root every placeholder gets its own inode.
//
// A directory conch may not write (a root-owned checkout, a read-only mount) gets no placeholder:
// what conch cannot create there, a sandboxed command (same user, no capabilities) cannot either.
// The exception is a directory of the user's own that lacks write permission: a command could
// chmod it back, so conch refuses to run commands there rather than leave the names open.
import { closeSync, linkSync, lstatSync, mkdirSync, opendirSync, openSync, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { killAllNow } from '../process/spawn.ts';
import {
  othersLiveInside,
  readOthers,
  recoverDead,
  removePlaceholder,
  sameRecord,
  saveRecords,
  stillThere,
  untouched,
  type PlaceholderRecord,
} from './placeholder-records.ts';
import { lockShared, unlock, unlockAll } from './placeholder-locks.ts';
import { ProtectedPathError, type PathKind } from './protected-paths.ts';
import { withUserLock } from './user-lock.ts';

interface Entry extends PlaceholderRecord {
  /** Scopes of this process holding it. */
  count: number;
}

export interface PlaceholderTarget {
  path: string;
  kind: PathKind;
}

const entries = new Map<string, Entry>();
/** Placeholders no longer used here whose removal another process's lock held off: tried again later. */
let deferred: PlaceholderRecord[] = [];
/** entries changed since the record was last written */
let dirty = false;
const SHARE_INODES = process.getuid?.() !== 0;
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A normal exit with commands still running (an abandoned call) must not leave placeholders in
  // the user's workspace, and must not leave them unprotected for a moment either: the commands go
  // first, then what held their protected names.
  process.on('exit', () => {
    killAllNow();
    unlockAll();
    const all = [...entries.values()];
    entries.clear();
    dirty ||= all.length > 0;
    // Nothing to let go of: no wait for a lock someone else holds on the way out.
    if (dirty || deferred.length > 0) locked(() => finish(all), () => {});
  });
}

/**
 * Run under the user lock; where there is none (see user-lock.ts), as this process alone. When
 * another process holds it too long, `busy` decides: bookkeeping done without the lock could remove
 * a placeholder another run binds, so taking one refuses the command and letting go leaves them in
 * this process's record for a later call (or, once it has ended, the next run) to remove.
 */
function locked<T>(work: () => T, busy: (reason: string) => T): T {
  const result = withUserLock(work);
  if (result.locked) return result.value;
  return result.busy ? busy(result.reason) : work();
}

const refuse = (reason: string): never => {
  throw new ProtectedPathError(`conch could not prepare the sandbox's protected paths: ${reason}.`);
};

function identityOf(path: string, kind: PathKind, info: Stats): PlaceholderRecord {
  return { path, kind, dev: info.dev, ino: info.ino, mode: info.mode & 0o7777, birth: info.birthtimeMs };
}

function lstatOrNull(path: string): Stats | null {
  try {
    // Without an exception for the usual absent name (ENOTDIR still throws, and is caught).
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/** Write this process's record if placeholders were created, adopted or dropped since the last write. */
function record(): void {
  if (!dirty) return;
  dirty = false;
  // Deferred ones stay listed: should this process die, a later recovery tries them again.
  saveRecords([...[...entries.values()].map(({ count: _count, ...item }) => item), ...deferred]);
}

/**
 * Drop placeholders from this process's record, then remove those no other live process uses;
 * one a process of another state directory binds (placeholder-locks.ts) waits for a later call.
 */
function finish(gone: PlaceholderRecord[]): void {
  record();
  if (gone.length === 0 && deferred.length === 0) return;
  const live = readOthers().live;
  const todo = [...deferred, ...gone];
  deferred = todo.filter((item) => !live.some((used) => sameRecord(used, item)) && removePlaceholder(item) === 'in-use');
  if (deferred.length > 0 || todo.length > gone.length) {
    dirty = true;
    record();
  }
}

/** Could what is at this path be a placeholder (an empty file, or an empty directory)? */
function mayBePlaceholder(path: string, info: Stats): boolean {
  if (info.isFile()) return info.size === 0;
  if (!info.isDirectory()) return false;
  return info.nlink <= 2 && isEmptyDir(path);
}

function isEmptyDir(path: string): boolean {
  try {
    const dir = opendirSync(path);
    try {
      return dir.readSync() === null;
    } finally {
      dir.closeSync();
    }
  } catch {
    return false;
  }
}

/**
 * The placeholders of one run (or one command). begin() before each command and end() after it;
 * close() once the run is over: the placeholders go when the last command has ended.
 */
export class PlaceholderScope {
  /** Paths whose entry this scope counts. */
  private readonly mine = new Set<string>();
  /** Existing paths found not to be placeholders, by inode, so they are not examined again. */
  private readonly real = new Map<string, number>();
  /** Shared locks on those of them that may be another process's placeholders (placeholder-locks.ts). */
  private readonly locks = new Map<string, number>();
  private active = 0;
  private closing = false;
  private released = 0;
  private recovered = false;

  begin(): void {
    this.active++;
    this.closing = false;
  }

  end(): void {
    this.active = Math.max(0, this.active - 1);
    if (this.closing && this.active === 0) this.releaseAll();
  }

  private readonly closers = new Set<() => void>();

  /** Called at each close() (the run's end), before the placeholders go: the run's held sandbox (held.ts). */
  onClose(callback: () => void): void {
    this.closers.add(callback);
  }

  /** Release everything once no command of this scope runs; the scope can be used again later. */
  close(): void {
    for (const callback of this.closers) callback();
    this.closers.clear();
    this.closing = true;
    if (this.active === 0) this.releaseAll();
  }

  /** Paths this scope holds a placeholder at (for tests and diagnostics). */
  paths(): string[] {
    return [...this.mine];
  }

  /** The empty files among them (git lists those as untracked; git-excludes.ts). */
  files(): string[] {
    return [...this.mine].filter((path) => entries.get(path)?.kind === 'file');
  }

  /**
   * Hold every target until the scope is released: a placeholder where nothing exists, the thing
   * itself where something does. Returns the targets to mount; the rest are absent names in a
   * directory nobody here can write (see the top of this file). The parent of each target must be a
   * real directory (it is re-checked: no placeholder through a symlink).
   */
  hold(targets: PlaceholderTarget[]): PlaceholderTarget[] {
    installExitHook();
    const todo = targets.filter((target) => !this.covers(target));
    if (todo.length === 0 && this.recovered) return targets;
    const skipped = locked(() => this.acquire(todo), refuse);
    return skipped.size === 0 ? targets : targets.filter((target) => !skipped.has(target.path));
  }

  /**
   * Placeholders other runs hold (this process's other scopes, other live conch processes) at paths
   * `inside` accepts, where a command of this scope could remove them: to bind read-only here as
   * well (index.ts). Sorted, so the same set gives the same options command after command.
   */
  othersInside(inside: (path: string) => boolean): string[] {
    const paths = new Set<string>();
    for (const entry of entries.values()) if (!this.mine.has(entry.path) && inside(entry.path) && stillThere(entry)) paths.add(entry.path);
    for (const record of othersLiveInside(inside)) if (!this.mine.has(record.path)) paths.add(record.path);
    return paths.size === 0 ? [] : [...paths].sort();
  }

  /** Already held as it is on disk now, so nothing to do (the common case from the second command on). */
  private covers(target: PlaceholderTarget): boolean {
    const info = lstatOrNull(target.path);
    if (!info) return false;
    if (this.mine.has(target.path)) {
      const entry = entries.get(target.path);
      return !!entry && info.dev === entry.dev && info.ino === entry.ino;
    }
    if (this.real.get(target.path) === info.ino) return true;
    if (mayBePlaceholder(target.path, info)) return false;
    this.real.set(target.path, info.ino);
    return true;
  }

  /** Under the lock: adopt, create or accept each target; then recover what dead processes left. */
  private acquire(todo: PlaceholderTarget[]): Set<string> {
    const others = readOthers();
    const skipped = new Set<string>();
    let linkTo: string | undefined;
    for (const target of todo) {
      const { path, kind } = target;
      for (let attempt = 0; ; attempt++) {
        if (attempt === 5) {
          throw new ProtectedPathError(`the protected path ${path} kept changing while conch prepared the sandbox; run the command again.`);
        }
        const info = lstatOrNull(path);
        const entry = entries.get(path);
        if (info) {
          const known =
            entry && info.dev === entry.dev && info.ino === entry.ino ? entry : untouched([...others.live, ...others.dead.flatMap((d) => d.records)], path, info);
          if (known) this.count(known);
          else if (!this.found(path, info)) continue; // removed or replaced while being locked: look again
          break;
        }
        const made = create(path, kind, linkTo);
        if (made === 'unwritable') skipped.add(path);
        else if (made === 'exists') continue; // made meanwhile by the user or a running command: theirs, held as it is
        else {
          if (kind === 'file') linkTo ??= path;
          this.count(identityOf(path, kind, made));
        }
        break;
      }
    }
    record();
    this.recovered = true;
    recoverDead(others, (item) => {
      const entry = entries.get(item.path);
      return !!entry && sameRecord(entry, item);
    });
    return skipped;
  }

  /**
   * Held as found (not known to be a placeholder): when it may be one of a process that shares no
   * records with this one, under a shared lock, so that process leaves it in place while this scope
   * binds it. false: it was removed or replaced meanwhile.
   */
  private found(path: string, info: Stats): boolean {
    if (mayBePlaceholder(path, info)) {
      const fd = lockShared(path, info);
      if (fd === 'changed') return false;
      const old = this.locks.get(path);
      if (old !== undefined) unlock(old);
      if (fd === null) this.locks.delete(path);
      else this.locks.set(path, fd);
    }
    this.real.set(path, info.ino);
    return true;
  }

  /** Count this scope as a user of the placeholder `item` (ours, another process's, or new). */
  private count(item: PlaceholderRecord): void {
    const entry = entries.get(item.path);
    const counted = this.mine.has(item.path);
    if (entry && sameRecord(entry, item)) {
      if (!counted) entry.count++;
    } else {
      // new, adopted, or made again after ours vanished: the identity on disk is what is removed later
      entries.set(item.path, { ...item, count: (entry?.count ?? 0) + (counted ? 0 : 1) });
      dirty = true;
    }
    this.mine.add(item.path);
  }

  /** How many times this scope let go of everything: what it held before is held no more. */
  get releases(): number {
    return this.released;
  }

  private releaseAll(): void {
    this.released++;
    this.closing = false;
    this.real.clear();
    for (const fd of this.locks.values()) unlock(fd);
    this.locks.clear();
    if (this.mine.size === 0) return;
    const gone: PlaceholderRecord[] = [];
    for (const path of this.mine) {
      const entry = entries.get(path);
      if (!entry || --entry.count > 0) continue;
      entries.delete(path);
      dirty = true;
      gone.push(entry);
    }
    this.mine.clear();
    locked(
      () => finish(gone),
      () => {
        deferred.push(...gone);
      },
    );
  }
}

/**
 * Create the placeholder; its lstat. 'unwritable': the directory is not writable for this user and
 * no sandboxed command can make it so, so the name needs no placeholder.
 */
function create(path: string, kind: PathKind, linkTo: string | undefined): Stats | 'exists' | 'unwritable' {
  const parent = dirname(path);
  if (realpathSync(parent) !== parent) {
    throw new ProtectedPathError(
      `the directory holding the protected path ${path} changed while conch prepared the sandbox (it is now a link or moved); run the command again.`,
    );
  }
  try {
    if (kind === 'dir') mkdirSync(path, 0o755);
    else if (!linkTo || !SHARE_INODES || !tryLink(linkTo, path)) closeSync(openSync(path, 'wx', 0o444));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return 'exists';
    // A read-only mount (EROFS) or an immutable directory (EPERM) stays so for a command without
    // capabilities; a directory another user owns (EACCES) cannot be chmodded by it.
    if (code === 'EROFS' || code === 'EPERM' || (code === 'EACCES' && statSync(parent).uid !== process.getuid?.())) return 'unwritable';
    if (code === 'EACCES') {
      throw new ProtectedPathError(
        `conch cannot hold the protected name ${path} read-only: its directory is yours but not writable, and a command could make it writable again. ` +
          `Make the directory writable (chmod u+w ${parent}), or run with --read-only.`,
      );
    }
    throw new ProtectedPathError(`conch cannot create the placeholder for the protected name ${path}: ${(error as Error).message}`);
  }
  return lstatSync(path);
}

/** Link `path` to a live, still empty file placeholder of ours; false when that is not possible. */
function tryLink(source: string, path: string): boolean {
  const entry = entries.get(source);
  if (!entry || entry.kind !== 'file') return false;
  try {
    const info = lstatSync(source);
    if (info.dev !== entry.dev || info.ino !== entry.ino || info.size !== 0) return false;
    linkSync(source, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error;
    return false; // another filesystem, or the source is gone: create instead
  }
}

/** Paths with a live placeholder of this process and how many scopes hold each (for tests). */
export function livePlaceholders(): Map<string, number> {
  return new Map([...entries].map(([path, entry]) => [path, entry.count]));
}

/**
 * Remove what killed conch processes of this user left (their records' untouched placeholders), as
 * a run's first command does; for a run's start, so that a run that runs no shell command cleans up
 * too. Never throws: a leftover costs clutter, never protection.
 */
export function recoverLeftovers(): void {
  try {
    // Looked at unlocked first: the lock needs flock through bun:ffi, ~150 ms at a start that has
    // nothing to recover (the usual case).
    if (readOthers().dead.length === 0) return;
    locked(() => {
      const others = readOthers();
      if (others.dead.length === 0) return;
      recoverDead(others, (item) => {
        const entry = entries.get(item.path);
        return !!entry && sameRecord(entry, item);
      });
    }, () => {});
  } catch {
    // tried again by the first shell command
  }
}
