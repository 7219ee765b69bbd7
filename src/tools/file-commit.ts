// What write and edit share: loading the current state of a target, deciding whether the model may
// replace it, and committing new content atomically without clobbering a concurrent change.
import type { BigIntStats } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../workspace/atomic.ts';
import { identityOf, revisionOf } from '../workspace/revision.ts';
import { formatBytes, type FileToolDeps } from './file-deps.ts';
import { blockingFile, directoryMessage, errorCode, fsErrorMessage } from './file-errors.ts';

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

/** The file as it is now, null when absent, or a message when it cannot be a write target. */
export async function loadCurrent(deps: FileToolDeps, abs: string, action: 'write' | 'edit', signal?: AbortSignal): Promise<Current | null | { error: string }> {
  let st: BigIntStats;
  try {
    st = await stat(abs, { bigint: true });
  } catch (error) {
    // ENOTDIR: a file stands where a parent directory should be; commit() explains that.
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return null;
    const message = await fsErrorMessage(error, abs, deps.workspace, action);
    if (message === null) throw error;
    return { error: message };
  }
  if (st.isDirectory()) return { error: directoryMessage(abs, deps.workspace, action) };
  if (!st.isFile()) return { error: `${deps.workspace.display(abs)} is not a regular file (a device, FIFO or socket); ${action} only changes files.` };
  const size = Number(st.size);
  if (action === 'edit' && size > EDIT_MAX_BYTES) {
    return { error: `${deps.workspace.display(abs)} is ${formatBytes(size)}, more than edit handles (${formatBytes(EDIT_MAX_BYTES)}); change it with bash (e.g. sed) instead.` };
  }
  try {
    if (action === 'write' && size > WRITE_DIFF_MAX_BYTES) return { stat: st, bytes: null, revision: await deps.revisions.currentRevision(abs, signal) };
    const bytes = await readFile(abs);
    return { stat: st, bytes, revision: revisionOf(bytes) };
  } catch (error) {
    const message = await fsErrorMessage(error, abs, deps.workspace, action);
    if (message === null) throw error;
    return { error: message };
  }
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
 */
export async function commit(deps: FileToolDeps, abs: string, bytes: Uint8Array, before: BigIntStats | null): Promise<{ revision: string } | { error: string }> {
  const shown = deps.workspace.display(abs);
  if (!before) {
    const blocker = await blockingFile(abs);
    if (blocker) return { error: `Cannot create ${shown}: ${deps.workspace.display(blocker)} is a file, not a directory.` };
    try {
      await mkdir(dirname(abs), { recursive: true });
    } catch (error) {
      const message = await fsErrorMessage(error, dirname(abs), deps.workspace, 'write');
      if (message === null) throw error;
      return { error: message };
    }
  }
  try {
    await writeFileAtomic(abs, bytes, {
      createOnly: before === null,
      mode: before ? Number(before.mode) & 0o7777 : undefined,
      beforeRename: async (temp) => {
        if (before) {
          const now = await stat(abs, { bigint: true }).catch(() => null);
          if (!now || identityOf(now) !== identityOf(before)) throw new ChangedMeanwhile(shown);
        }
        await deps.beforeRename?.(temp);
      },
    });
  } catch (error) {
    if (error instanceof ChangedMeanwhile) return { error: error.message };
    if (errorCode(error) === 'EEXIST') {
      return { error: `${shown} already exists (it appeared while conch was creating it); nothing was written. Read it, then replace it with expected_revision.` };
    }
    const message = await fsErrorMessage(error, abs, deps.workspace, 'write');
    if (message === null) throw error;
    return { error: `${message} Nothing was written.` };
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
