// The latest session of each workspace, remembered so that `conch -c` opens one file instead of
// reading the header of every session in the store (500 by default: 4-5 ms of a cold start).
//
// One entry per (store, workspace) in conch's cache folder, outside the store: the store is the
// user's sessions and nothing else (what `conch sessions` and the tests list), and everything here
// can be rebuilt. Each run of a session names it here when it starts and, if another run renamed
// the entry meanwhile, when it ends: the entry follows the order of the session files' mtimes that
// the scan goes by.
//
// An entry is a symbolic link whose text is `v1:<session id>`, never followed: one readlink(2) to
// read, and written by making a new link and renaming it over the old, which is atomic (two conch
// processes at once, or a killed one, leave a whole entry, the last writer's) and, unlike a regular
// file renamed over another, makes ext4 flush no data (0.3-1 ms of a start). It is only a hint: the
// store checks that the file it names exists and belongs to the workspace, and scans (then rewrites
// the entry) when it is missing, corrupt or stale. A failure to write one is ignored (-c scans).
import { lstatSync, mkdirSync, readdirSync, readlinkSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { randomHex } from '../core/random.ts';

const PREFIX = 'v1:';
const ENTRY = /^v1:([0-9a-f]{16})$/;
const TEMP = '.tmp-';
/** A temporary link this old was left by a killed writer (a live one renames it within microseconds). */
const ORPHAN_MS = 10 * 60_000;

export class LatestIndex {
  /** `dir` holds the entries; `store` is the session directory they point into. */
  constructor(readonly dir: string, readonly store: string) {}

  /** The session id the entry for `cwd` names, if it is a well-formed entry. */
  read(cwd: string): string | null {
    try {
      return ENTRY.exec(readlinkSync(this.path(cwd)))?.[1] ?? null;
    } catch {
      return null; // none, or not a link (readlink refuses anything else)
    }
  }

  /** `id` is now the latest session of `cwd`. */
  write(cwd: string, id: string): void {
    const temp = join(this.dir, `${TEMP}${randomHex(6)}`);
    try {
      try {
        symlinkSync(`${PREFIX}${id}`, temp);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        symlinkSync(`${PREFIX}${id}`, temp);
      }
      renameSync(temp, this.path(cwd));
    } catch {
      try {
        unlinkSync(temp);
      } catch {
        // never made
      }
    }
  }

  /** `cwd` has no session left. */
  forget(cwd: string): void {
    try {
      unlinkSync(this.path(cwd));
    } catch {
      // none
    }
  }

  /** Remove temporary links killed writers left (called on the rare path that scans anyway). */
  sweep(now = Date.now()): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith(TEMP)) continue;
      const path = join(this.dir, name);
      try {
        if (now - lstatSync(path).mtimeMs > ORPHAN_MS) unlinkSync(path);
      } catch {
        // gone meanwhile
      }
    }
  }

  /**
   * The entry's name: a hash of store and workspace. The entry cannot say which it was written for,
   * so the store checks the session's own header against the workspace; another store's entry
   * would need a collision of 128 bits.
   */
  private path(cwd: string): string {
    const name = new Bun.CryptoHasher('sha256').update(`${this.store}\0${cwd}`).digest('hex').slice(0, 32);
    return join(this.dir, name);
  }
}
