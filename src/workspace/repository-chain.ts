// Where a project's own files are looked for (skills' .agents/skills, AGENTS.md): in every directory
// from the repository root down to the working directory, as Codex and Claude Code do, so a run in a
// monorepo's package sees the guidance of the whole repository and of that package.
import { lstatSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isWithin } from '../core/paths.ts';

/**
 * The directories from the repository root (the nearest ancestor holding `.git`, a directory or a
 * worktree's file) down to `cwd`, root first; just `cwd` outside a repository, so a stray folder
 * above never joins in. With `ceiling` (the home directory), a walk that would climb above it stops
 * as outside a repository: a `.git` in /home or / does not make the folders above home the project's.
 * Nor does a folder above `cwd` that another user can write to (one they own, a world-writable one
 * such as /tmp, or one a shared group may write): what they put there (a `.git`, an AGENTS.md, a skill) would be read as the project's.
 */
export function repositoryChain(cwd: string, ceiling?: string): string[] {
  const chain: string[] = [];
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (ceiling !== undefined && dir !== ceiling && isWithin(ceiling, dir)) return [cwd];
    if (dir !== cwd && othersCanWrite(dir)) return [cwd];
    chain.unshift(dir);
    if (hasGit(dir)) return chain;
    if (dirname(dir) === dir) return [cwd];
  }
}

function hasGit(dir: string): boolean {
  try {
    return lstatSync(join(dir, '.git'), { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false; // a folder conch may not look into holds no repository it can use
  }
}

/**
 * Whether someone other than this user (and root) can create files in `dir`; unknown counts as yes.
 * Its group counts unless it is the user's own (a private group) or root's: a shared group's
 * members are other users, as workspace/foreign-writers.ts holds for `conch trust`.
 */
function othersCanWrite(dir: string): boolean {
  const uid = process.getuid?.();
  if (uid === undefined) return false; // no owners to compare (Windows)
  try {
    const stat = statSync(dir);
    const groupWrites = (stat.mode & 0o020) !== 0 && stat.gid !== process.getgid?.() && stat.gid !== 0;
    return (stat.uid !== uid && stat.uid !== 0) || (stat.mode & 0o002) !== 0 || groupWrites;
  } catch {
    return true;
  }
}
