// The protected plan (protected-paths.ts) and the placeholders held for it (placeholders.ts), reused
// from one command of a run to the next while the workspace root is unchanged. Planning reads the
// root and a dozen names in it, and holding looks at each of them again: about a fifth of a
// sandboxed command's own time in conch, for an answer that is the same until an entry of the root
// is created, removed or renamed, which changes the root's ctime.
//
// Only the root is stamped, so only patterns that name an entry of the root are planned this way
// (the defaults are; a configured glob with a `/` makes every command plan afresh), plus each
// placeholderUnless file (its content decides, not the root). A stamp whose times are not safely in
// the past is not kept: a file system's clock ticks coarsely, and a change within the same tick as
// the last one would leave the times as they were (the racy-timestamp problem git's index has).
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { PlaceholderScope, PlaceholderTarget } from './placeholders.ts';
import { planProtected, type ProtectedPattern, type ProtectedPlan } from './protected-paths.ts';

/** Times newer than this (ms) may still share their tick with a change to come. */
const RACY_MS = 100;

interface Memo {
  key: string;
  patterns: ProtectedPattern[];
  stamp: string;
  releases: number;
  plan: ProtectedPlan;
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
  if (before && memo && memo.key === key && memo.patterns === patterns && memo.stamp === before.value && memo.releases === scope.releases) {
    const targets = memo.plan.targets.filter((t) => wanted(t.path));
    if (targets.map((t) => t.path).join('\0') === memo.wanted) {
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
  if (key !== null && before && !before.racy && stamp(root, patterns)?.value === before.value) {
    memos.set(scope, { key, patterns, stamp: before.value, releases: scope.releases, plan, wanted: targets.map((t) => t.path).join('\0'), held });
  }
  return { plan, held };
}

const rootOnly = new WeakMap<ProtectedPattern[], boolean>();

function memoKey(root: string, patterns: ProtectedPattern[]): string | null {
  let only = rootOnly.get(patterns);
  if (only === undefined) rootOnly.set(patterns, (only = !patterns.some((p) => p.pattern.includes('/') || p.pattern === '' || p.pattern === '**')));
  return only ? root : null;
}

function stamp(root: string, patterns: ProtectedPattern[]): { value: string; racy: boolean } | null {
  const now = Date.now();
  const paths = [root, ...patterns.flatMap((p) => (p.placeholderUnless ?? []).map((rel) => join(root, rel)))];
  let racy = false;
  const parts: string[] = [];
  for (const path of paths) {
    let info;
    try {
      info = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      info = undefined; // ENOTDIR: .git/HEAD where .git is a file
    }
    if (!info) {
      parts.push('-');
      continue;
    }
    if (info.mtimeMs > now - RACY_MS || info.ctimeMs > now - RACY_MS) racy = true;
    parts.push(`${info.dev}:${info.ino}:${info.mode}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`);
  }
  return parts[0] === '-' ? null : { value: parts.join('|'), racy };
}
