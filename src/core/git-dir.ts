// When git takes a directory for a git dir with no `.git` in it: a bare repository, a worktree's
// admin dir, a repository's `.git` opened as a folder of its own. The user's own git obeys such a
// directory's config and hooks unsandboxed, so the file tools' policy (workspace/paths.ts), the
// after-run check (workspace/nested-git.ts) and the sandbox's plan (sandbox/protected-paths.ts) all
// ask the same question, here.
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The names that make a directory a git dir (isGitDir). */
export const GIT_DIR_NAMES = ['HEAD', 'objects', 'refs', 'commondir'];

/**
 * What decides whether git looks past a tree's top to the top itself: its `.git`, and the HEAD in
 * it (rootIsGitDir). A plan kept from one command to the next is stamped with these.
 */
export const WORK_TREE_GIT = ['.git', '.git/HEAD'];

/**
 * Whether git takes a directory holding these names for a git dir: HEAD, and objects and refs either
 * beside it or in the directory its `commondir` names (as a linked worktree's git dir does), which
 * is then where its config and hooks come from too.
 */
export function isGitDir(names: Set<string>): boolean {
  // In any case: on a case-insensitive file system git finds `head` as HEAD.
  const lower = new Set([...names].map((name) => name.toLowerCase()));
  return lower.has('head') && (lower.has('commondir') || (lower.has('objects') && lower.has('refs')));
}

/**
 * Whether git, started in `root`, takes `root` itself for the git dir (or would, once `adding`, a
 * name at its top, exists). Git looks for `.git` first: while that is a repository (a `.git` file
 * naming one, or a `.git` directory that is one), the top's HEAD, objects and refs are ordinary
 * files of the work tree, and this is false.
 */
export function rootIsGitDir(root: string, adding?: string): boolean {
  // HEAD first: most directories have none, and then nothing else needs looking at.
  const head = info(join(root, 'HEAD'));
  // An empty HEAD is none for git: the sandbox's placeholder for an absent one is empty.
  const hasHead = head !== undefined && !(head.isFile() && head.size === 0);
  if (!hasHead && adding?.toLowerCase() !== 'head') return false;
  const names = new Set(GIT_DIR_NAMES.filter((name) => name !== 'HEAD' && exists(join(root, name))));
  names.add('HEAD');
  if (adding !== undefined) names.add(adding);
  if (!isGitDir(names)) return false;
  return !workTreeGit(root);
}

/**
 * The git dir that `root` is or lies inside (conch started in a bare repository, in .git/hooks, in a
 * worktree's admin dir), as git's own search upward from `root` finds it, `adding` counted at
 * root's top as in rootIsGitDir; null when the search meets a work tree first (a directory whose
 * .git is a repository: the root is that tree's files), or nothing. Inside one, every file of the
 * root is the repository's own: hooks and config the user's git runs.
 */
export function gitDirAround(root: string, adding?: string): string | null {
  for (let dir = root; ; dir = dirname(dir)) {
    if (rootIsGitDir(dir, dir === root ? adding : undefined)) return dir;
    if (workTreeGit(dir) || dirname(dir) === dir) return null;
  }
}

/** The top of the work tree `dir` lies in (the folder whose `.git` is a repository), or null. */
export function workTreeTop(dir: string): string | null {
  for (; ; dir = dirname(dir)) {
    if (workTreeGit(dir)) return dir;
    if (dirname(dir) === dir) return null;
  }
}

function workTreeGit(root: string): boolean {
  // Followed: git takes a .git link for what it leads to.
  const git = info(join(root, '.git'), true);
  if (git?.isFile()) return git.size > 0;
  if (!git?.isDirectory()) return false;
  const head = info(join(root, '.git', 'HEAD'));
  if (!head?.isFile() || head.size === 0) return false;
  let inside: string[];
  try {
    inside = readdirSync(join(root, '.git'));
  } catch {
    return false;
  }
  return isGitDir(new Set(inside));
}

function info(path: string, follow = false) {
  try {
    return follow ? statSync(path, { throwIfNoEntry: false }) : lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined; // ENOTDIR and the like: not there as such
  }
}

function exists(path: string): boolean {
  return info(path) !== undefined;
}
