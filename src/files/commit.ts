// What write and edit share: loading the current state of a target, deciding whether the model may
// replace it, and committing new content atomically without clobbering a concurrent change.
// Both the load and the commit act through the target's pinned directory, never by path, so a
// concurrent command that swaps a directory for a symbolic link cannot redirect them.
import { constants, type BigIntStats } from 'node:fs';
import { access, lstat, open, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { writeFileAtomic } from '../workspace/atomic.ts';
import { PinnedDir } from '../workspace/pinned-dir.ts';
import { identityOf, revisionOf } from '../workspace/revision.ts';
import { formatBytes, type FileToolDeps } from './deps.ts';
import { blockingFile, directoryMessage, errorCode, fsErrorMessage } from './errors.ts';

export interface Current {
  stat: BigIntStats;
  /** null when the file is larger than the caller wanted in memory (its revision is then hashed in chunks). */
  bytes: Buffer | null;
  revision: string;
}

/** Largest existing file write loads to show the host a before/after diff. */
export const WRITE_DIFF_MAX_BYTES = 64 * 1024 * 1024;
/** Largest file edit works on: it holds the file as text, twice, while editing. */
export const EDIT_MAX_BYTES = 256 * 1024 * 1024;

/**
 * The directory that holds `abs`, pinned (see workspace/pinned-dir.ts); null when a directory on the
 * way is missing or is a file (so `abs` does not exist), or a message. A directory on the way that
 * is now a symbolic link was swapped in after the policy check: if the path now leads somewhere the
 * policy forbids, that PolicyError is thrown; otherwise the caller is told to retry.
 */
async function pinParent(deps: FileToolDeps, abs: string, action: 'write' | 'edit', create: boolean): Promise<PinnedDir | null | { error: string }> {
  try {
    return await PinnedDir.open(dirname(abs), { create });
  } catch (error) {
    const code = errorCode(error);
    const at = (error as { path?: string }).path ?? dirname(abs);
    if (code === 'ENOTDIR' || code === 'ELOOP') {
      const now = await lstat(at).catch(() => null);
      if (now && !now.isDirectory() && !now.isSymbolicLink()) {
        if (!create) return null;
        return { error: `Cannot create ${deps.workspace.display(abs)}: ${deps.workspace.display(at)} is a file, not a directory.` };
      }
      return pathChanged(deps, abs, abs);
    }
    if (code === 'ENOENT' && !create) return null;
    const message = await fsErrorMessage(error, at, deps.workspace, action);
    if (message === null) throw error;
    return { error: message };
  }
}

/** Refusal for a path that changed under conch: the policy's, if the path now breaks it (thrown). */
async function pathChanged(deps: FileToolDeps, abs: string, nowAt: string): Promise<{ error: string }> {
  await deps.workspace.resolve(nowAt, 'write');
  const shown = deps.workspace.display(abs);
  return { error: `${shown}: a directory on its path was replaced or moved while conch was working on it; nothing was written. Check it (e.g. \`ls -la ${deps.workspace.display(dirname(abs))}\`) and retry.` };
}

/** The file as it is now, null when absent, or a message when it cannot be a write target. Read through its pinned directory. */
export async function loadCurrent(deps: FileToolDeps, abs: string, action: 'write' | 'edit', signal?: AbortSignal): Promise<Current | null | { error: string }> {
  const dir = await pinParent(deps, abs, action, false);
  if (dir === null || 'error' in dir) return dir;
  try {
    return await loadFrom(deps, dir, abs, action, signal);
  } finally {
    dir.close();
  }
}

async function loadFrom(deps: FileToolDeps, dir: PinnedDir, abs: string, action: 'write' | 'edit', signal?: AbortSignal): Promise<Current | null | { error: string }> {
  const entry = dir.entry(basename(abs));
  let st: BigIntStats;
  try {
    st = await lstat(entry, { bigint: true });
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    const message = await fsErrorMessage(error, abs, deps.workspace, action);
    if (message === null) throw error;
    return { error: message };
  }
  // `abs` is canonical: a link here was put in after the policy check.
  if (st.isSymbolicLink()) return pathChanged(deps, abs, abs);
  if (st.isDirectory()) return { error: directoryMessage(abs, deps.workspace, action) };
  if (!st.isFile()) return { error: `${deps.workspace.display(abs)} is not a regular file (a device, FIFO or socket); ${action} only changes files.` };
  const size = Number(st.size);
  if (action === 'edit' && size > EDIT_MAX_BYTES) {
    return { error: `${deps.workspace.display(abs)} is ${formatBytes(size)}, more than edit handles (${formatBytes(EDIT_MAX_BYTES)}); change it with bash (e.g. sed) instead.` };
  }
  let fh: FileHandle;
  try {
    // O_NONBLOCK: should a FIFO be swapped in after the lstat, opening it must not hang.
    fh = await open(entry, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    if (errorCode(error) === 'ELOOP') return pathChanged(deps, abs, abs);
    const message = await fsErrorMessage(error, abs, deps.workspace, action);
    if (message === null) throw error;
    return { error: message };
  }
  try {
    // The stat the commit's identity check compares against is the one of the bytes read.
    st = await fh.stat({ bigint: true });
    if (!st.isFile()) return { error: `${deps.workspace.display(abs)} is not a regular file (a device, FIFO or socket); ${action} only changes files.` };
    const locked = await unwritable(deps, entry, abs, st, action);
    if (locked) return locked;
    if (action === 'write' && Number(st.size) > WRITE_DIFF_MAX_BYTES) return { stat: st, bytes: null, revision: await deps.revisions.revisionOfHandle(abs, fh, st, signal) };
    const bytes = await fh.readFile();
    return { stat: st, bytes, revision: revisionOf(bytes) };
  } catch (error) {
    const message = await fsErrorMessage(error, abs, deps.workspace, action);
    if (message === null) throw error;
    return { error: message };
  } finally {
    await fh.close();
  }
}

/**
 * A refusal when conch's user may not write the file itself. The replacement is a rename in the
 * directory, which its permissions alone allow: without this, a read-only file, or another user's
 * (which would then become ours), would be replaced where a shell's `>` fails.
 */
async function unwritable(deps: FileToolDeps, entry: string, abs: string, st: BigIntStats, action: 'write' | 'edit'): Promise<{ error: string } | null> {
  try {
    await access(entry, constants.W_OK);
    return null;
  } catch (error) {
    if (errorCode(error) !== 'EACCES' && errorCode(error) !== 'EPERM') {
      const message = await fsErrorMessage(error, abs, deps.workspace, action);
      if (message === null) throw error;
      return { error: message };
    }
  }
  const shown = deps.workspace.display(abs);
  const mode = (Number(st.mode) & 0o7777).toString(8).padStart(4, '0');
  const whose = Number(st.uid) === process.getuid?.() ? 'read-only' : "another user's file";
  return {
    error:
      `Permission denied: cannot ${action} ${shown}: it is not writable by conch's user (${whose}, mode ${mode}), and ${action} does not replace a file its permissions protect. ` +
      'Leave it as it is, unless the task is to change it and its permissions may be changed first (e.g. `chmod u+w` on a file of your own).',
  };
}

/**
 * Why the model may not replace this file, or null when it may: it must name the current revision,
 * or have seen the current content in this run. `requireSeen` is false for edit, whose exact-text
 * matching already proves the model knows what it is changing.
 */
export function freshnessProblem(deps: FileToolDeps, abs: string, current: Current, expected: string | undefined, requireSeen: boolean): string | null {
  const shown = deps.workspace.display(abs);
  if (expected !== undefined) {
    if (expected === current.revision) return null;
    return `${shown} is not at revision ${expected}: its current revision is ${current.revision}. It changed since that revision was taken; read it again before changing it.`;
  }
  const seen = deps.revisions.lastSeen(abs);
  if (seen === undefined) {
    if (!requireSeen) return null;
    return `${shown} already exists and has not been read in this session; read it first (or pass its revision as expected_revision) so its content is not lost by accident.`;
  }
  if (seen === current.revision) return null;
  return `${shown} changed on disk since it was last read or written in this session (current revision ${current.revision}); read it again before changing it.`;
}

export class ChangedMeanwhile extends Error {
  constructor(readonly shown: string) {
    super(`${shown} changed on disk while conch was writing it; nothing was written. Read it again and retry.`);
    this.name = 'ChangedMeanwhile';
  }
}

/**
 * Commit `bytes` to `abs` atomically. With `before` (the stat the decision was made on) the file
 * must still have that identity just before the rename; without it, the file must not exist
 * (create only, decided by the file system). Returns the new revision, or a message on an expected failure.
 * Everything happens in the pinned directory, which must still be at dirname(abs) just before the rename.
 */
export async function commit(deps: FileToolDeps, abs: string, bytes: Uint8Array, before: BigIntStats | null): Promise<{ revision: string } | { error: string }> {
  const shown = deps.workspace.display(abs);
  const name = basename(abs);
  if (!before) {
    const blocker = await blockingFile(abs);
    if (blocker) return { error: `Cannot create ${shown}: ${deps.workspace.display(blocker)} is a file, not a directory.` };
  }
  const dir = await pinParent(deps, abs, 'write', before === null);
  if (dir === null) return { error: new ChangedMeanwhile(shown).message };
  if ('error' in dir) return dir;
  let moved: { error: string } | null = null;
  try {
    await writeFileAtomic(abs, bytes, {
      dir,
      createOnly: before === null,
      mode: before ? Number(before.mode) & 0o7777 : undefined,
      beforeRename: async (temp) => {
        if (before) {
          const now = await lstat(dir.entry(name), { bigint: true }).catch(() => null);
          if (!now || identityOf(now) !== identityOf(before)) throw new ChangedMeanwhile(shown);
        }
        await deps.beforeRename?.(temp);
        // Last, closest to the rename: the directory may have been moved since it was pinned.
        const where = dir.location();
        if (where !== dir.path) {
          moved = await pathChanged(deps, abs, join(where, name));
          throw new ChangedMeanwhile(shown);
        }
      },
    });
  } catch (error) {
    if (moved) return moved;
    if (error instanceof ChangedMeanwhile) return { error: error.message };
    if (errorCode(error) === 'EEXIST') {
      return { error: `${shown} already exists (it appeared while conch was creating it); nothing was written. Read it, then replace it with expected_revision.` };
    }
    const message = await fsErrorMessage(error, abs, deps.workspace, 'write');
    if (message === null) throw error;
    return { error: `${message} Nothing was written.` };
  } finally {
    dir.close();
  }
  const revision = revisionOf(bytes);
  deps.revisions.invalidate(abs);
  deps.revisions.record(abs, revision);
  return { revision };
}

/** Text for the host's diff view: null for content that is not UTF-8 text. */
export function asText(bytes: Uint8Array | null): string | null {
  if (!bytes) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

export function hasCrlf(text: string): boolean {
  return text.includes('\r\n');
}
