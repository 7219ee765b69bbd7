// macOS: render the Seatbelt profile for /usr/bin/sandbox-exec from the template in
// sandbox-profiles/. Paths become SBPL string literals (escaped); glob patterns become regexes, so a
// protected name is covered whether or not it exists and `.env.*` really means every such name.
//
// Escaping rules (SBPL is a Scheme dialect):
// - "…" strings: backslash and double quote are escaped; control characters cannot be expressed
//   reliably, so a path containing one is refused (fail closed) instead of being mangled.
// - #"…" regex literals keep backslashes as they are, which is what the regex needs, but cannot hold a
//   double quote: a quote (or control character) in a path becomes [^/] there, which matches a little
//   more than the name. Regexes are only used to deny writes, so matching more is the safe side.
import type { SandboxProfile } from './profiles.ts';
import { loadTemplate } from './profiles.ts';
import type { ProtectedPattern } from './protected-paths.ts';

export const SANDBOX_EXEC = '/usr/bin/sandbox-exec';

export interface SeatbeltInput {
  profile: SandboxProfile;
  /** Canonical (realpath) paths: Seatbelt sees /private/tmp, not /tmp. */
  workspace: string;
  tmpDir: string;
  writableRoots: string[];
  /** Default and configured protected patterns, workspace-relative. */
  protected: ProtectedPattern[];
  /** Patterns protected in each writable root too, relative to it (the defaults: its .git, .env …). */
  rootProtected?: ProtectedPattern[];
  /** A writable root's own patterns besides rootProtected, by the root (its repository's hooks folder). */
  rootExtra?: Record<string, ProtectedPattern[]>;
  /** The workspace and writable roots that are git dirs or lie inside one (core/git-dir.ts): read-only as a whole. */
  gitDirRoots?: string[];
  /** Absolute canonical paths whose contents commands may not read (SandboxSettings.hidden). */
  hidden?: string[];
  /**
   * conch's own directories (its per-user state, this run's directory), canonical: neither read
   * nor written by commands, but for a writable root inside one (the run's temp dir).
   */
  own?: string[];
  network: boolean;
}

export class SeatbeltPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SeatbeltPathError';
  }
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const GLOB_CHARS = /[*?[\]{}()!+@]/;

/** An SBPL string literal. */
export function sbString(value: string): string {
  if (CONTROL.test(value)) {
    throw new SeatbeltPathError(
      `path ${JSON.stringify(value)} contains a control character, which a Seatbelt profile cannot express; rename it or pass --unrestricted.`,
    );
  }
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** Literal text as a regex fragment for a #"…" literal. */
export function regexLiteral(text: string): string {
  let out = '';
  for (const ch of text) {
    if (ch === '"' || CONTROL.test(ch)) out += '[^/]';
    else if (/[\\.^$|()[\]{}*+?]/.test(ch)) out += `\\${ch}`;
    else out += ch;
  }
  return out;
}

/** One glob segment (no slash) as a regex fragment; unsupported constructs widen to [^/]*. */
function segmentRegex(segment: string): string {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const ch = segment[i]!;
    if (ch === '*') {
      out += '[^/]*';
      while (segment[i + 1] === '*') i++;
    } else if (ch === '?') out += '[^/]';
    else if (ch === '{') {
      const end = segment.indexOf('}', i);
      if (end === -1) return '[^/]*';
      const options = segment.slice(i + 1, end).split(',');
      out += `(${options.map(segmentRegex).join('|')})`;
      i = end;
    } else if ('[]()!+@'.includes(ch)) return '[^/]*';
    else out += regexLiteral(ch);
  }
  return out;
}

/** A workspace-relative glob as an anchored regex matching the path and everything below it. */
export function globRegex(workspace: string, pattern: string): string {
  const parts = pattern.split('/').filter((s) => s !== '' && s !== '.');
  let body = '';
  for (const [index, part] of parts.entries()) {
    const last = index === parts.length - 1;
    if (part === '**') {
      if (!last) body += '(/.*)?';
    } else body += `/${segmentRegex(part)}`;
  }
  return `^${regexLiteral(workspace)}${body}(/.*)?$`;
}

function join(root: string, rel: string): string {
  return rel === '' ? root : `${root}/${rel}`;
}

function rules(filters: string[], indent: string): string {
  return filters.map((f) => f.replaceAll(/^/gm, indent)).join('\n');
}

export function protectedFilters(workspace: string, patterns: ProtectedPattern[]): string[] {
  const out = new Set<string>();
  for (const { pattern } of patterns) {
    if (pattern === '' || pattern === '**') out.add(`(subpath ${sbString(workspace)})`);
    else if (GLOB_CHARS.test(pattern)) out.add(`(regex #"${globRegex(workspace, pattern)}")`);
    else out.add(`(subpath ${sbString(join(workspace, pattern))})`);
  }
  return [...out];
}

/** The workspace and the literal directories above nested protected patterns (rename/remove denied). */
export function pinnedFilters(workspace: string, patterns: ProtectedPattern[]): string[] {
  const out = new Set<string>([`(literal ${sbString(workspace)})`]);
  for (const { pattern } of patterns) {
    const parts = pattern.split('/').filter((s) => s !== '' && s !== '.');
    let prefix = '';
    for (const part of parts.slice(0, -1)) {
      if (GLOB_CHARS.test(part)) break;
      prefix = prefix ? `${prefix}/${part}` : part;
      out.add(`(literal ${sbString(join(workspace, prefix))})`);
    }
  }
  return [...out];
}

/** The profile's writable paths, in its order. */
function writablePaths(input: SeatbeltInput): string[] {
  return input.profile.seatbelt.writable.flatMap((entry) =>
    entry === '{workspace}' ? [input.workspace]
    : entry === '{tmpDir}' ? [input.tmpDir]
    : entry === '{writableRoots}' ? input.writableRoots
    : [entry],
  );
}

export function writableFilters(input: SeatbeltInput): string[] {
  return [...new Set(writablePaths(input).map((path) => `(subpath ${sbString(path)})`))];
}

/**
 * One filter for `path` and everything below it but the writable roots inside it (a rule's filters
 * are alternatives, so the exception has to be part of the one filter).
 */
function subpathExcept(path: string, writable: string[]): string {
  const inside = [...new Set(writable.filter((root) => root.startsWith(`${path}/`)))];
  if (inside.length === 0) return `(subpath ${sbString(path)})`;
  return [
    '(require-all',
    `  (subpath ${sbString(path)})`,
    '  (require-not',
    '    (require-any',
    rules(inside.map((root) => `(subpath ${sbString(root)})`), '      '),
    '    )))',
  ].join('\n');
}

/**
 * Reading the contents of hidden paths and of conch's own directories is denied (metadata stays
 * readable, so paths still resolve), except below a writable root that lies inside one (the
 * workspace inside a hidden home stays usable, as on Linux, where its mount is deeper than the
 * hidden one; the run's temp dir inside its own directory).
 */
export function hiddenRules(input: SeatbeltInput): string {
  const hidden = [...new Set([...(input.hidden ?? []), ...(input.own ?? [])])];
  if (hidden.length === 0) return '; no hidden paths';
  const writable = writablePaths(input);
  return `(deny file-read-data\n${rules(hidden.map((path) => subpathExcept(path, writable)), '  ')})`;
}

/**
 * Writes to conch's own directories are denied like writes to protected paths (bwrap hides them
 * wherever a command could write them), and the directories leading to one from a writable root
 * are pinned: renamed away, they would let a command put a directory of its own, or a link, in
 * the place where conch looks for its state.
 */
function ownFilters(input: SeatbeltInput): { denied: string[]; pinned: string[] } {
  const writable = writablePaths(input);
  const denied: string[] = [];
  const pinned = new Set<string>();
  for (const dir of new Set(input.own ?? [])) {
    denied.push(subpathExcept(dir, writable));
    for (const root of writable.filter((r) => dir.startsWith(`${r}/`))) {
      for (let parent = dir.slice(0, dir.lastIndexOf('/')); parent.length > root.length; parent = parent.slice(0, parent.lastIndexOf('/'))) {
        pinned.add(`(literal ${sbString(parent)})`);
      }
    }
  }
  return { denied, pinned: [...pinned] };
}

export function renderSeatbeltProfile(input: SeatbeltInput): string {
  const template = loadTemplate(input.profile.seatbelt.template);
  const network = input.network ? loadTemplate('seatbelt-network.sb').trimEnd() : '; network off (--no-network): no network rules';
  const own = ownFilters(input);
  const protectedRules = [
    ...protectedFilters(input.workspace, input.protected),
    ...input.writableRoots.flatMap((root) => protectedFilters(root, [...(input.rootProtected ?? []), ...(input.rootExtra?.[root] ?? [])])),
    ...(input.gitDirRoots ?? []).map((root) => `(subpath ${sbString(root)})`),
    ...own.denied,
  ];
  const values: Record<string, string> = {
    WRITABLE: rules(writableFilters(input), '      '),
    PROTECTED: rules(protectedRules, '        '),
    PINNED: rules([...new Set([...pinnedFilters(input.workspace, input.protected), ...own.pinned])], '  '),
    HIDDEN: hiddenRules(input),
    NETWORK: network,
  };
  // One pass over the template: substituted text is never scanned again for markers.
  return template.replace(/\{\{([A-Z]+)\}\}/g, (marker, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`Seatbelt template ${input.profile.seatbelt.template}: unknown marker ${marker}`);
    return value;
  });
}

export function seatbeltArgv(profileText: string, command: string[]): string[] {
  return [SANDBOX_EXEC, '-p', profileText, ...command];
}
