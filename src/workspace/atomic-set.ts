// Several files changed as one: every new content is staged first (a private temporary file beside
// each target, flushed), then each target in turn is checked against the revision the caller
// decided on, kept as a backup (a hard link to the original, so nothing is copied) and replaced.
// Should any step fail midway, every target already replaced is put back from its backup and every
// file created is removed: all the changes happen or none. Backups go once all succeeded.
//
// Not atomic against a crash between two renames (no file system offers that); a killed process
// leaves the backups (named with TEMP_MARKER) beside their files. Its staged files are removed at
// exit, or by the next write in their folder when it was killed (temp-leftovers.ts).
import { constants, type Stats } from 'node:fs';
import { copyFile, link, lstat, open, rename, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { defaultMode, keepOwner, openTemp, TEMP_MARKER, tempNameFor, writeAll } from './atomic.ts';
import { sweepDeadTemps } from './temp-leftovers.ts';
import { PinnedDir } from './pinned-dir.ts';
import { revisionOf } from './revision.ts';
import { randomHex } from '../core/random.ts';

export interface FileChange {
  /** Canonical absolute path of the target. */
  path: string;
  /** The new content; null removes the file. */
  data: Uint8Array | null;
  /** The revision (SHA-256, as revisionOf) the change was decided on; null: the file must not exist yet. */
  expectedRevision: string | null;
}

export interface AtomicSetOptions {
  /** Runs just before target `index` is replaced (after the earlier ones were). Tests inject failures here. */
  beforeReplace?: (path: string, index: number) => void | Promise<void>;
}

/** Why the changes were not made; the files are as they were, unless `unrestored` names some. */
export class FilesNotWritten extends Error {
  override name = 'FilesNotWritten';
  constructor(
    /** The target that failed. */
    readonly path: string,
    /** 'changed' (not at the expected revision, or moved), 'exists' (a file to create is there), else the system's code (EACCES, EISDIR, …). */
    readonly code: string,
    message: string,
    /** Targets that could not be put back, each with where its original is kept. Empty normally. */
    readonly unrestored: { path: string; original: string }[] = [],
  ) {
    super(message);
  }
}

interface Slot {
  change: FileChange;
  dir: PinnedDir;
  name: string;
  temp: string | null;
  /** Stops the at-exit removal of `temp`, once it is renamed or removed. */
  tempDone: () => void;
  backup: string | null;
  /** What was done to the target: undone in reverse on a failure. */
  done: 'replaced' | 'created' | 'removed' | null;
}

const code = (error: unknown): string => (error as { code?: string } | null)?.code ?? 'EIO';
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/** Apply every change or none (see the top of this file). Paths must be canonical and distinct. */
export async function writeFilesAtomic(changes: FileChange[], options: AtomicSetOptions = {}): Promise<void> {
  const dirs = new Map<string, PinnedDir>();
  const made: string[] = [];
  const slots: Slot[] = [];
  let current = changes[0]?.path ?? '';
  try {
    for (const change of changes) {
      const parent = dirname(change.path);
      let dir = dirs.get(parent);
      if (!dir) {
        made.push(...(await missingAncestors(parent)));
        current = change.path;
        dir = await PinnedDir.open(parent, { create: change.data !== null });
        dirs.set(parent, dir);
        await sweepDeadTemps(dir);
      }
      slots.push({ change, dir, name: basename(change.path), temp: null, tempDone: () => {}, backup: null, done: null });
    }
    for (const slot of slots) {
      current = slot.change.path;
      await stage(slot);
    }
    for (const [index, slot] of slots.entries()) {
      current = slot.change.path;
      await check(slot);
      await options.beforeReplace?.(slot.change.path, index);
      await apply(slot);
    }
  } catch (error) {
    const unrestored = await rollBack(slots);
    for (const dir of made.reverse()) await rmdir(dir).catch(() => {});
    for (const dir of dirs.values()) dir.close();
    if (error instanceof FilesNotWritten) throw new FilesNotWritten(error.path, error.code, error.message, unrestored);
    throw new FilesNotWritten(current, code(error), `cannot write ${current}: ${code(error)}`, unrestored);
  }
  for (const slot of slots) {
    if (slot.backup) await unlink(slot.dir.entry(slot.backup)).catch(() => {});
    if (slot.temp) await unlink(slot.dir.entry(slot.temp)).catch(() => {});
    slot.tempDone();
  }
  for (const dir of dirs.values()) {
    await dir.sync();
    dir.close();
  }
}

/** The folders on the way to `dir` that do not exist yet (created by the pin, removed on failure), deepest last. */
async function missingAncestors(dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (let at = dir; !(await lstat(at).catch(() => null)); at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  return missing;
}

async function currentStat(slot: Slot): Promise<Stats | null> {
  return lstat(slot.dir.entry(slot.name)).catch((error) => (code(error) === 'ENOENT' ? null : Promise.reject(error)));
}

/** The new content in a flushed private file beside the target, with the target's permissions. */
async function stage(slot: Slot): Promise<void> {
  if (slot.change.data === null) return;
  const existing = await currentStat(slot);
  const temp = tempNameFor(slot.name);
  const { fh, done } = await openTemp(slot.dir, temp);
  slot.temp = temp;
  slot.tempDone = done;
  try {
    await writeAll(fh, slot.change.data);
    if (existing?.isFile()) await keepOwner(fh, existing);
    await fh.chmod(existing?.isFile() ? existing.mode & 0o7777 : defaultMode());
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** The target is still what the caller decided on, and its folder is where it was. */
async function check(slot: Slot): Promise<void> {
  const { path, expectedRevision } = slot.change;
  if (!slot.dir.inPlace()) throw new FilesNotWritten(path, 'changed', `the folder of ${path} was moved or replaced meanwhile`);
  const st = await currentStat(slot);
  if (expectedRevision === null) {
    if (st) throw new FilesNotWritten(path, 'exists', `${path} already exists`);
    return;
  }
  if (!st?.isFile()) throw new FilesNotWritten(path, 'changed', `${path} is ${st ? 'no longer a regular file' : 'gone'}`);
  const fh = await open(slot.dir.entry(slot.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (revisionOf(await fh.readFile()) !== expectedRevision) throw new FilesNotWritten(path, 'changed', `${path} changed since it was read`);
  } finally {
    await fh.close();
  }
}

async function apply(slot: Slot): Promise<void> {
  const target = slot.dir.entry(slot.name);
  if (slot.change.expectedRevision !== null) {
    const backup = tempNameFor(slot.name).replace(TEMP_MARKER, `${TEMP_MARKER}bak-${randomHex(2)}`);
    try {
      await link(target, slot.dir.entry(backup));
    } catch (error) {
      // File systems without hard links (FAT, some network mounts): a copy is the backup.
      if (!NO_HARD_LINKS.has(code(error))) throw error;
      await copyFile(target, slot.dir.entry(backup), constants.COPYFILE_EXCL);
    }
    slot.backup = backup;
    if (slot.change.data === null) {
      await unlink(target);
      slot.done = 'removed';
    } else {
      await rename(slot.dir.entry(slot.temp!), target);
      slot.temp = null;
      slot.done = 'replaced';
    }
    return;
  }
  // Created with link(2), which fails if a file appeared meanwhile, instead of replacing it.
  try {
    await link(slot.dir.entry(slot.temp!), target);
  } catch (error) {
    if (code(error) === 'EEXIST') throw new FilesNotWritten(slot.change.path, 'exists', `${slot.change.path} already exists`);
    if (!NO_HARD_LINKS.has(code(error))) throw error;
    await rename(slot.dir.entry(slot.temp!), target);
    slot.temp = null;
  }
  slot.done = 'created';
}

/** Undo what was done, last first; returns the targets that could not be put back. */
async function rollBack(slots: Slot[]): Promise<{ path: string; original: string }[]> {
  const unrestored: { path: string; original: string }[] = [];
  for (const slot of [...slots].reverse()) {
    const target = slot.dir.entry(slot.name);
    try {
      if (slot.done === 'created') await unlink(target);
      else if (slot.done && slot.backup) {
        await rename(slot.dir.entry(slot.backup), target);
        slot.backup = null;
      }
    } catch {
      if (slot.backup) unrestored.push({ path: slot.change.path, original: `${dirname(slot.change.path)}/${slot.backup}` });
      slot.backup = null;
    }
    if (slot.backup) await unlink(slot.dir.entry(slot.backup)).catch(() => {});
    if (slot.temp) await unlink(slot.dir.entry(slot.temp)).catch(() => {});
    slot.tempDone();
  }
  return unrestored;
}
