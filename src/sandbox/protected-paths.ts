// Which workspace paths a command must not change, as concrete paths for bind mounts. Cost is bounded
// by the patterns, not by the workspace: a literal costs a few lstat calls, a glob segment one readdir
// of an existing directory; nothing walks the tree. Synchronous: a few local syscalls per command
// cost less than the promise machinery around them.
//
// A protected path that does not exist yet is covered by masking its first missing component (a
// placeholder bound read-only, see placeholders.ts), so `.env.local` or `.conch/x` cannot be created.
// The existing directories between the workspace and a nested protected path are "pinned" (bound onto
// themselves with their current mode): a mount point cannot be renamed or removed, so moving a parent
// away cannot carry the protection off with it and free the name.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import picomatch from 'picomatch';
import type { ProtectedDefaults } from './profiles.ts';
import { isWithin } from '../core/paths.ts';
import { gitDirAround } from '../core/git-dir.ts';

export type PathKind = 'dir' | 'file';

export interface ProtectedPattern {
  pattern: string;
  kind: PathKind;
  /** Names to mask even when absent (globs cannot be enumerated before they exist). */
  knownNames?: string[];
  /**
   * Workspace-relative files that make masking this path unnecessary while it is absent: when one of
   * them is a non-empty regular file, an absent path gets no placeholder (an existing one is still
   * held). Non-empty, so no placeholder (always empty) can stand in for one of them.
   */
  placeholderUnless?: string[];
}

export interface ProtectedTarget {
  /** Absolute path: the protected path itself, or the first missing component of an absent one. */
  path: string;
  kind: PathKind;
  exists: boolean;
}

export interface ProtectedPlan {
  /** What to hold read-only; absent ones are masked with a placeholder. */
  targets: ProtectedTarget[];
  /** Existing directories above nested protected paths (absolute). */
  pins: string[];
  /** What could not be fully enforced, for the user (workspace-relative). */
  notes: string[];
}

/** A protected path the sandbox cannot hold (a symlink), or a malformed pattern: names it and the fix. */
export class ProtectedPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtectedPathError';
  }
}

const GLOB_CHARS = /[*?[\]{}()!+@]/;

/** `path` as a glob that matches it alone (for the file tools' picomatch and the plan below alike). */
export function escapeGlob(path: string): string {
  return path.replace(/[\\*?[\]{}()!+@]/g, '\\$&');
}

/** A segment whose glob characters are all escaped names one file: that name; null for a real glob. */
export function literalSegment(segment: string): string | null {
  let name = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === '\\' && i + 1 < segment.length) name += segment[++i];
    else if (GLOB_CHARS.test(c)) return null;
    else name += c;
  }
  return name;
}

const MAX_CANDIDATES = 256;

/** The plan's note for a workspace that is a git dir, which the bash tool adds to a command that failed there. */
export const GIT_DIR_ROOT_NOTE =
  "the workspace is itself a git dir or lies inside one (a bare repository, a .git, or a worktree's admin dir: HEAD with objects and refs, or with a commondir, and no .git), " +
  "so commands see all of it read-only: the user's own git would run its config and hooks unsandboxed. Write elsewhere (the run's /tmp); only the user can lift this (conch --unrestricted).";

export function defaultPatterns(defaults: ProtectedDefaults): ProtectedPattern[] {
  return [
    ...defaults.paths.map((p) => ({ pattern: p.path, kind: p.kind, ...(p.placeholderUnless ? { placeholderUnless: p.placeholderUnless } : {}) })),
    ...defaults.globs.map((g) => ({ pattern: g.pattern, kind: g.kind, knownNames: g.knownNames })),
  ];
}

/** A configured glob (workspace-relative, picomatch) as a pattern; `dir/**` means the directory. */
export function patternFromGlob(glob: string): ProtectedPattern {
  let pattern = glob.trim().replace(/^(\.\/)+/, '');
  let kind: PathKind = 'file';
  while (pattern.endsWith('/**') || pattern.endsWith('/')) {
    pattern = pattern.endsWith('/') ? pattern.slice(0, -1) : pattern.slice(0, -3);
    kind = 'dir';
  }
  const segments = pattern.split('/');
  if (glob.startsWith('/') || segments.includes('..') || pattern.includes('\0')) {
    throw new ProtectedPathError(
      `protected glob "${glob}" must be workspace-relative and stay inside the workspace; fix it in the config (workspace.protectedGlobs).`,
    );
  }
  return { pattern, kind };
}

/** Expand patterns to concrete workspace-relative paths (existing matches plus literal/known names). */
function expand(root: string, item: ProtectedPattern, notes: string[]): string[] {
  const segments = item.pattern === '' || item.pattern === '**' ? [] : item.pattern.split('/').filter((s) => s !== '' && s !== '.');
  let candidates = [''];
  for (const [index, segment] of segments.entries()) {
    const last = index === segments.length - 1;
    if (segment === '**') {
      // Matching at every depth would mean walking the workspace; only the shallowest match is held.
      notes.push(`protected glob "${item.pattern}": the sandbox holds its matches at the first level only; deeper matches are protected for the file tools, not for shell commands.`);
      continue;
    }
    // A literal is held even before it exists (a placeholder); `.hooks\[1\]` is the folder `.hooks[1]`.
    const literal = literalSegment(segment);
    if (literal !== null) {
      candidates = candidates.map((c) => (c ? `${c}/${literal}` : literal));
      continue;
    }
    const match = picomatch(segment, { dot: true });
    const next = new Set<string>();
    for (const dir of candidates) {
      for (const name of listDir(join(root, dir))) if (match(name)) next.add(dir ? `${dir}/${name}` : name);
      if (last) for (const name of item.knownNames ?? []) if (match(name)) next.add(dir ? `${dir}/${name}` : name);
    }
    candidates = [...next];
    if (candidates.length > MAX_CANDIDATES) {
      notes.push(`protected glob "${item.pattern}" matches more than ${MAX_CANDIDATES} paths; only the first ${MAX_CANDIDATES} are held by the sandbox.`);
      candidates = candidates.slice(0, MAX_CANDIDATES);
    }
  }
  return candidates;
}

function listDir(dir: string): string[] {
  try {
    return lstatSync(dir).isDirectory() ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}

function nonEmptyFile(path: string): boolean {
  try {
    const info = lstatSync(path);
    return info.isFile() && info.size > 0;
  } catch {
    return false;
  }
}


export function planProtected(root: string, patterns: ProtectedPattern[]): ProtectedPlan {
  const notes: string[] = [];
  const targets = new Map<string, { exists: boolean; kind: PathKind }>();
  const pins = new Set<string>();

  for (const item of patterns) {
    for (const rel of expand(root, item, notes)) {
      const parts = rel === '' ? [] : rel.split('/');
      let prefix = '';
      let outcome: { rel: string; exists: boolean; kind: PathKind } | null = null;
      const walked: string[] = [];
      for (const [index, part] of parts.entries()) {
        prefix = prefix ? `${prefix}/${part}` : part;
        const last = index === parts.length - 1;
        // No exception for an absent name: most protected names are absent, in every command.
        const info = lstatSync(join(root, prefix), { throwIfNoEntry: false });
        if (!info) {
          outcome = { rel: prefix, exists: false, kind: last ? item.kind : 'dir' };
          break;
        }
        if (info.isSymbolicLink()) {
          throw new ProtectedPathError(
            `protected path "${prefix}" is a symbolic link; a sandboxed command could replace the link itself, so conch refuses to run it. ` +
              `Replace the link with the file or directory it points to, or pass --unrestricted.`,
          );
        }
        if (last) outcome = { rel: prefix, exists: true, kind: info.isDirectory() ? 'dir' : 'file' };
        else if (!info.isDirectory()) break; // a file where a directory would be: the path cannot exist
        else walked.push(prefix);
      }
      if (parts.length === 0) outcome = { rel: '', exists: true, kind: 'dir' };
      if (!outcome) continue;
      if (!outcome.exists && item.placeholderUnless?.some((path) => nonEmptyFile(join(root, path)))) continue;
      targets.set(outcome.rel, { exists: outcome.exists, kind: outcome.kind });
      for (const dir of walked) if (dir !== outcome.rel) pins.add(dir);
    }
  }

  // A root that is itself a git dir (a bare repository, a worktree's admin dir) or lies inside one
  // (.git/hooks) is held whole: git reads names all over a git dir (config, hooks, commondir, info,
  // modules, worktrees …), a list of them would miss the next one, and there is no work tree in it to
  // keep writable. What is above the root is read-only for commands anyway.
  if (gitDirAround(root) !== null) {
    targets.set('', { exists: true, kind: 'dir' });
    notes.push(GIT_DIR_ROOT_NOTE);
  }

  // A target inside another target is already covered; so is a pin inside or equal to a target.
  const rels = [...targets.keys()].sort();
  const kept = rels.filter((rel) => !rels.some((other) => other !== rel && isWithin(rel, other)));
  const keptPins = [...pins].filter((pin) => !kept.some((rel) => isWithin(pin, rel))).sort();
  const abs = (rel: string) => (rel === '' ? root : join(root, rel));
  return {
    targets: kept.map((rel) => ({ path: abs(rel), ...targets.get(rel)! })),
    pins: keptPins.map(abs),
    notes: [...new Set(notes)],
  };
}
