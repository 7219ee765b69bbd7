// The protected plan (protected-paths.ts) and the placeholders held for it (placeholders.ts), reused
// from one command of a run to the next while the workspace root is unchanged. Planning reads the
// root and a dozen names in it, and holding looks at each of them again: about a fifth of a
// sandboxed command's own time in conch, for an answer that is the same until an entry of the root
// is created, removed or renamed, which changes the root's ctime.
//
// Only the root is stamped, so only patterns that name an entry of the root are planned this way
// (the defaults are; a configured glob with a `/` makes every command plan afresh), plus each
// placeholderUnless file (its content decides, not the root) and the root's .git (whether the root
// is itself a git dir: core/git-dir.ts). A stamp whose times are not safely in
// the past is not kept: a file system's clock ticks coarsely (a jiffy; a second or two on some file
// systems), and a change within the same tick as the last one would leave the times as they were
// (the racy-timestamp problem git's index has).
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { PlaceholderScope, PlaceholderTarget } from './placeholders.ts';
import { planProtected, type ProtectedPattern, type ProtectedPlan } from './protected-paths.ts';
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
  const key = memoKey(root, patterns);
  const before = key === null ? null : stamp(root, patterns);
  const memo = memos.get(scope);
  if (before && memo && memo.key === key && memo.patterns === patterns && sameStamp(memo.stamp, before.value) && memo.releases === scope.releases) {
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
  const after = key !== null && before && !before.racy ? stamp(root, patterns) : null;
  if (key !== null && before && after && sameStamp(after.value, before.value)) {
    memos.set(scope, { key, patterns, stamp: before.value, releases: scope.releases, plan, wantedBy: wanted, wanted: chosen(plan, wanted), held });
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

const rootOnly = new WeakMap<ProtectedPattern[], boolean>();

function memoKey(root: string, patterns: ProtectedPattern[]): string | null {
  let only = rootOnly.get(patterns);
  if (only === undefined) rootOnly.set(patterns, (only = !patterns.some((p) => p.pattern.includes('/') || p.pattern === '' || p.pattern === '**')));
  return only ? root : null;
}

// Numbers, not text: this runs before every command, and turning a dozen times into text cost more
// than the lstat calls.
function stamp(root: string, patterns: ProtectedPattern[]): { value: number[]; racy: boolean } | null {
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
  for (const pattern of patterns) for (const rel of pattern.placeholderUnless ?? []) add(join(root, rel));
  for (const rel of WORK_TREE_GIT) add(join(root, rel));
  return { value, racy };
}
