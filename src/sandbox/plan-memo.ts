// The protected plan (protected-paths.ts) and the placeholders held for it (placeholders.ts), reused
// from one command of a run to the next while the workspace root is unchanged. Planning reads the
// root and a dozen names in it, and holding looks at each of them again: about a fifth of a
// sandboxed command's own time in conch, for an answer that is the same until an entry of the root
// is created, removed or renamed, which changes the root's ctime.
//
// The root is stamped, and each directory between it and a nested literal pattern (.config for
// .config/systemd: a name made, removed or renamed in it changes its times as the root's do), so
// patterns of literal names are planned this way (the defaults, a home run's .config/git …); one
// with a glob segment below the root makes every command plan afresh. So are each placeholderUnless
// file (its content decides, not the root) and the root's .git (whether the root is itself a git
// dir: core/git-dir.ts). A stamp whose times are not safely in
// the past is not kept: a file system's clock ticks coarsely (a jiffy; a second or two on some file
// systems), and a change within the same tick as the last one would leave the times as they were
// (the racy-timestamp problem git's index has).
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { PlaceholderScope, PlaceholderTarget } from './placeholders.ts';
import { literalSegment, planProtected, type ProtectedPattern, type ProtectedPlan } from './protected-paths.ts';
import { WORK_TREE_GIT } from '../core/git-dir.ts';

/** Times newer than this (ms) may still share their tick with a change to come. */
const RACY_MS = 100;
/**
 * A file system that keeps whole seconds (ext4 with 128-byte inodes, HFS+) or two (FAT's mtime,
 * which is also its ctime) shows both times on a second: the tick is then that long.
 */
const COARSE_RACY_MS = 2000 + RACY_MS;

/** Whether a change to come could leave these times as they are (they are too recent). */
export function racyTimes(info: { mtimeMs: number; ctimeMs: number }, now: number): boolean {
  const window = info.mtimeMs % 1000 === 0 && info.ctimeMs % 1000 === 0 ? COARSE_RACY_MS : RACY_MS;
  return info.mtimeMs > now - window || info.ctimeMs > now - window;
}

interface Memo {
  key: string;
  patterns: ProtectedPattern[];
  stamp: number[];
  releases: number;
  plan: ProtectedPlan;
  /** The function that chose the targets held, and what it chose. */
  wantedBy: (path: string) => boolean;
  wanted: string;
  held: string[];
}

const memos = new WeakMap<PlaceholderScope, Memo>();

export interface HeldProtection {
  plan: ProtectedPlan;
  /** The targets held (placeholders in place), to mount read-only. */
  held: string[];
}

/**
 * The plan for `root`, and its targets that `wanted` keeps held in `scope`. `check` sees the plan
 * before anything is held (a writable root inside a protected path is refused there).
 */
export function holdProtected(
  root: string,
  patterns: ProtectedPattern[],
  scope: PlaceholderScope,
  wanted: (path: string) => boolean,
  check: (plan: ProtectedPlan) => void,
): HeldProtection {
  const dirs = stampedDirs(patterns);
  const before = dirs === null ? null : stamp(root, patterns, dirs);
  const memo = memos.get(scope);
  if (before && memo && memo.key === root && memo.patterns === patterns && sameStamp(memo.stamp, before.value) && memo.releases === scope.releases) {
    // The same function (the run's layout is kept: command-template.ts) chooses the same targets.
    if (wanted === memo.wantedBy || chosen(memo.plan, wanted) === memo.wanted) {
      check(memo.plan);
      return { plan: memo.plan, held: memo.held };
    }
  }
  const plan = planProtected(root, patterns);
  check(plan);
  const targets: PlaceholderTarget[] = plan.targets.filter((t) => wanted(t.path));
  const held = scope.hold(targets).map((t) => t.path);
  // Kept only when nothing changed while planning and holding (a placeholder made now changes the
  // root: the next command plans again, and keeps that).
  const after = dirs !== null && before && !before.racy ? stamp(root, patterns, dirs) : null;
  if (before && after && sameStamp(after.value, before.value)) {
    memos.set(scope, { key: root, patterns, stamp: before.value, releases: scope.releases, plan, wantedBy: wanted, wanted: chosen(plan, wanted), held });
  }
  return { plan, held };
}

function chosen(plan: ProtectedPlan, wanted: (path: string) => boolean): string {
  return plan.targets
    .filter((t) => wanted(t.path))
    .map((t) => t.path)
    .join('\0');
}

function sameStamp(a: number[], b: number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const dirsByPatterns = new WeakMap<ProtectedPattern[], string[] | null>();

/** The directories between the root and the nested literal patterns, or null when a pattern's plan reads a folder below the root through a glob. */
function stampedDirs(patterns: ProtectedPattern[]): string[] | null {
  let found = dirsByPatterns.get(patterns);
  if (found === undefined) dirsByPatterns.set(patterns, (found = dirsToStamp(patterns)));
  return found;
}

function dirsToStamp(patterns: ProtectedPattern[]): string[] | null {
  const dirs = new Set<string>();
  for (const { pattern } of patterns) {
    if (pattern === '' || pattern === '**') return null;
    const segments = pattern.split('/').filter((s) => s !== '' && s !== '.');
    // A glob at the root reads the root alone, which is stamped; one below would read a folder in it.
    const names = segments.slice(0, -1).map(literalSegment);
    if (names.some((name) => name === null)) return null;
    if (segments.length > 1 && literalSegment(segments.at(-1)!) === null) return null;
    for (let i = 1; i < segments.length; i++) dirs.add(names.slice(0, i).join('/'));
  }
  return [...dirs].sort();
}

// Numbers, not text: this runs before every command, and turning a dozen times into text cost more
// than the lstat calls.
function stamp(root: string, patterns: ProtectedPattern[], dirs: string[]): { value: number[]; racy: boolean } | null {
  const now = Date.now();
  let racy = false;
  const value: number[] = [];
  const add = (path: string): boolean => {
    let info;
    try {
      info = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      info = undefined; // ENOTDIR: .git/HEAD where .git is a file
    }
    if (!info) {
      value.push(-1);
      return false;
    }
    if (racyTimes(info, now)) racy = true;
    value.push(info.dev, info.ino, info.mode, info.size, info.mtimeMs, info.ctimeMs);
    return true;
  };
  if (!add(root)) return null;
  for (const rel of dirs) add(join(root, rel));
  for (const pattern of patterns) for (const rel of pattern.placeholderUnless ?? []) add(join(root, rel));
  for (const rel of WORK_TREE_GIT) add(join(root, rel));
  return { value, racy };
}
