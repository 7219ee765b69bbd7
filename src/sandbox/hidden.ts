// Paths a command must not read (SandboxSettings.hidden: read-denied roots, existing matches of
// read-deny globs), hidden inside bubblewrap: an existing directory is covered by an empty tmpfs
// that is made read-only after every other mount is in place, an existing file (or socket, device…)
// by an empty read-only file. Both are mount points, so they cannot be removed or renamed away.
//
// What is hidden is decided per path, on the canonical path (a symlink is followed, so the file it
// points to is what gets covered), and only for paths that exist when the command starts: nothing
// scans the workspace, so a glob cannot be enforced here beyond the concrete paths the caller
// passes. A mount deeper than a hidden directory (the workspace inside a hidden home, a writable
// root) shows through it, as its own configuration asks; protected paths inside a hidden directory
// need no mount of their own, since it is read-only.
import { closeSync, lstatSync, openSync, realpathSync, renameSync, statSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { isWithin } from '../core/paths.ts';
import { coveringMount, depth, type ConcreteMount } from './bwrap.ts';
import { forgetUserStateDir, userStateDir } from './user-dir.ts';

export const HIDDEN_RANK = 3;
/** The rank of pins (bwrap.ts): directories bound onto themselves so that they stay where they are. */
const PIN_RANK = 1;

/** A hidden path that cannot be honoured as given; the message names it and the fix. */
export class HiddenPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HiddenPathError';
  }
}

let counter = 0;

function usableEmptyFile(path: string): boolean {
  try {
    const info = lstatSync(path);
    return info.isFile() && info.size === 0 && (info.mode & 0o222) === 0 && info.uid === (process.getuid?.() ?? info.uid);
  } catch {
    return false;
  }
}

/** An empty read-only regular file of this user's, to bind over hidden files. */
export function emptyFile(): string {
  for (let attempt = 0; ; attempt++) {
    const path = join(userStateDir().path, 'empty');
    if (usableEmptyFile(path)) return path;
    try {
      const staging = `${path}.${process.pid}.${++counter}`;
      closeSync(openSync(staging, 'wx', 0o444));
      renameSync(staging, path);
      if (usableEmptyFile(path)) return path;
    } catch (error) {
      if (attempt > 0) throw error;
    }
    if (attempt > 0) throw new Error(`cannot keep an empty file at ${path}`);
    forgetUserStateDir(); // the directory itself went away: look again
  }
}

function checkAbsolute(path: string): void {
  if (!isAbsolute(path)) {
    throw new HiddenPathError(`hidden path "${path}" must be absolute; resolve it against the workspace before passing it to the sandbox.`);
  }
}

function checkNotRoot(path: string, real: string): void {
  if (real === '/') throw new HiddenPathError(`hidden path "${path}" is the root directory; a command cannot run with nothing visible.`);
}

/** Seatbelt: canonical paths (the target of a link), absent ones as given (a rule needs no file). */
export function canonicalHidden(paths: string[]): string[] {
  return paths.map((path) => {
    checkAbsolute(path);
    let real = path;
    try {
      real = realpathSync(path);
    } catch {
      // absent: the rule holds for whatever appears there
    }
    checkNotRoot(path, real);
    return real;
  });
}

/** What hiding `paths` depends on: each existing one's canonical path and kind, shallowest first. */
export type HiddenFacts = Array<[path: string, kind: 'dir' | 'file']>;

/**
 * The canonical path and kind of each of `paths` that exists now. Missing paths are skipped (there
 * is nothing to read); an lstat comes first, so that the usual absent path costs no exception.
 */
export function hiddenFacts(paths: string[]): HiddenFacts {
  const found = new Map<string, 'dir' | 'file'>();
  for (const path of paths) {
    checkAbsolute(path);
    let real: string;
    let info: Stats | undefined;
    try {
      // Absent here means absent for realpath too (it follows the same components, and more).
      info = lstatSync(path, { throwIfNoEntry: false });
      if (!info) continue;
      // The kind is read afresh: an inode number is reused (a file removed, a directory made there).
      const known = canonical.get(path);
      if (known && known.dev === info.dev && known.ino === info.ino && !info.isSymbolicLink()) {
        found.set(path, info.isDirectory() ? 'dir' : 'file');
        continue;
      }
      real = realpathSync(path);
    } catch {
      continue; // absent (or unreachable for this user, and so for the command too)
    }
    checkNotRoot(path, real);
    try {
      const kind = statSync(real).isDirectory() ? 'dir' : 'file';
      found.set(real, kind);
      if (real === path) remember(path, info);
    } catch {
      continue;
    }
  }
  return [...found].sort((a, b) => depth(a[0]) - depth(b[0]));
}

/**
 * Paths found canonical (no link on the way), by identity: the same file or directory there again,
 * and no link in its place, needs no realpath. The identity only tells that no directory on the way
 * became a link since (the thing would then be found elsewhere, as another inode, or as the same
 * one, which is then hidden all the same). Every command looks at each hidden path.
 */
const canonical = new Map<string, { dev: number; ino: number }>();

function remember(path: string, info: Stats): void {
  if (info.isSymbolicLink()) return;
  if (canonical.size >= 256) canonical.clear();
  canonical.set(path, { dev: info.dev, ino: info.ino });
}

/**
 * The mounts that hide `paths`, given the mounts already planned. Missing paths are skipped (there
 * is nothing to read); so are paths already inside a hidden directory, and paths where the command
 * sees something else than the host path (/tmp is the run's temp dir).
 */
export function hiddenMounts(paths: string[], base: ConcreteMount[]): ConcreteMount[] {
  const facts = hiddenFacts(paths);
  return hiddenMountsFor(facts, base, facts.some(([, kind]) => kind === 'file') ? emptyFile() : '');
}

/** hiddenMounts from its facts; `empty` is emptyFile() when a file is among them. */
export function hiddenMountsFor(facts: HiddenFacts, base: ConcreteMount[], empty: string): ConcreteMount[] {
  const out: ConcreteMount[] = [];
  const pinned = new Set<string>();
  for (const [path, kind] of facts) {
    const cover = coveringMount([...base, ...out], path);
    if (!cover || cover.rank === HIDDEN_RANK) continue;
    if (cover.source !== undefined && cover.source !== cover.path) continue;
    // Under a writable mount, renaming a directory above the hidden path (mv ~/.docker ~/.d) would
    // carry the secret away from the name the next command hides: each one becomes a mount point
    // (bound onto itself, still writable), which cannot be renamed or removed.
    if (cover.type === 'bind') {
      for (let dir = dirname(path); dir !== cover.path && isWithin(dir, cover.path); dir = dirname(dir)) {
        if (pinned.has(dir)) break;
        pinned.add(dir);
        out.push({ type: 'bind', path: dir, rank: PIN_RANK });
      }
    }
    out.push(
      kind === 'dir'
        ? { type: 'tmpfs', path, rank: HIDDEN_RANK, readOnly: true }
        : { type: 'ro-bind', source: empty, path, rank: HIDDEN_RANK },
    );
  }
  return out;
}
